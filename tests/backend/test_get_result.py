"""get_result / aget_result, refresh / arefresh and Task.get_result in every state."""

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome, Start
from django_threadmill.codec.payloads import _rebuilt_task
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import from_ms
from django_threadmill.compat import (
    InvalidTask,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
)
from testproject.example.tasks import add, attempt_info, echo, send_welcome
from tests.backend_support import (
    WORKER,
    fail,
    finish,
    reserve,
    start,
    succeed,
)
from tests.conftest import tasks_setting

Read = Callable[[str], TaskResult]


@pytest.fixture(params=["get_result", "aget_result"])
def read(request: pytest.FixtureRequest, backend: ThreadmillTaskBackend) -> Read:
    """Read a result through the sync API or the native async one."""
    if request.param == "get_result":
        return backend.get_result
    return lambda result_id: asyncio.run(backend.aget_result(result_id))


@pytest.fixture(params=["refresh", "arefresh"])
def refresh(request: pytest.FixtureRequest) -> Callable[[TaskResult], None]:
    if request.param == "refresh":
        return lambda result: result.refresh()
    return lambda result: asyncio.run(result.arefresh())


def test_ready_result_rebuilds_the_task(read: Read) -> None:
    enqueued = send_welcome.using(priority=-3).enqueue("ada@example.com")
    result = read(enqueued.id)
    assert result.status == TaskResultStatus.READY
    assert result.task == send_welcome.using(priority=-3)
    assert result.task.func is send_welcome.func
    assert (result.id, result.args, result.kwargs) == (enqueued.id, ["ada@example.com"], {})
    # Stored on the Redis clock; the enqueue's own result read this process's clock.
    assert result.enqueued_at is not None
    assert enqueued.enqueued_at is not None
    assert abs(result.enqueued_at - enqueued.enqueued_at) < timedelta(seconds=1)
    assert result.backend == "default"
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value


def test_reserved_result_still_reads_ready(backend: ThreadmillTaskBackend, read: Read) -> None:
    enqueued = echo.enqueue(1)
    reserve(backend, enqueued.id)
    result = read(enqueued.id)
    assert result.status == TaskResultStatus.READY
    assert result.worker_ids == []


def test_running_result_shows_the_attempt(backend: ThreadmillTaskBackend, read: Read) -> None:
    enqueued = echo.enqueue(1)
    start(backend, enqueued.id)
    result = read(enqueued.id)
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == [WORKER]
    assert result.attempts == 1
    assert result.started_at is not None
    assert result.last_attempted_at == result.started_at
    assert result.finished_at is None


def test_successful_result_has_the_return_value(backend: ThreadmillTaskBackend, read: Read) -> None:
    enqueued = add.enqueue(2, 3)
    succeed(backend, enqueued.id, {"sum": 5, "parts": [2, 3]})
    result = read(enqueued.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"sum": 5, "parts": [2, 3]}
    assert result.is_finished
    assert result.finished_at is not None
    assert result.started_at is not None
    assert result.errors == []


def test_failed_result_has_the_error(backend: ThreadmillTaskBackend, read: Read) -> None:
    enqueued = echo.enqueue(1)
    fail(backend, enqueued.id, ValueError("disk full"))
    result = read(enqueued.id)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is ValueError
    assert error.exception_class_path == "builtins.ValueError"
    assert "ValueError: disk full" in error.traceback
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value


@pytest.mark.parametrize("result_id", ["0" * 32 + "@default", "not-one-of-ours", ""])
def test_unknown_id_does_not_exist(read: Read, result_id: str) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        read(result_id)


def test_refresh_follows_the_task(
    backend: ThreadmillTaskBackend, refresh: Callable[[TaskResult], None]
) -> None:
    result = echo.enqueue("x")
    lease = start(backend, result.id)
    refresh(result)
    assert (result.status, result.worker_ids) == (TaskResultStatus.RUNNING, [WORKER])
    finish(backend, lease, Outcome.SUCCESSFUL, '"x"')
    refresh(result)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == "x"
    assert result.finished_at is not None


def test_takes_context_survives_the_round_trip(read: Read) -> None:
    assert read(attempt_info.enqueue().id).task.takes_context


@pytest.mark.parametrize(("given", "kind"), [(None, "a NoneType"), (5, "an int")])
def test_an_id_that_is_not_a_str_is_refused_naming_the_fix(
    backend: ThreadmillTaskBackend, given: object, kind: str
) -> None:
    message = f"A task id is a str (TaskResult.id), not {kind}: {given!r}."
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        backend.get_result(given)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        asyncio.run(backend.aget_result(given))  # type: ignore[arg-type]


def test_task_get_result_checks_the_task(backend: ThreadmillTaskBackend) -> None:
    result = add.enqueue(1, 2)
    assert add.get_result(result.id).args == [1, 2]
    with pytest.raises(Exception, match="Task does not match") as raised:
        echo.get_result(result.id)
    assert type(raised.value).__name__ == "TaskResultMismatch"


async def test_task_aget_result_checks_the_task() -> None:
    result = await add.aenqueue(1, 2)
    assert (await add.aget_result(result.id)).args == [1, 2]
    with pytest.raises(Exception, match="Task does not match") as raised:
        await echo.aget_result(result.id)
    assert type(raised.value).__name__ == "TaskResultMismatch"


def test_results_are_independent_copies(read: Read) -> None:
    result_id = echo.enqueue([1]).id
    first: Any = read(result_id)
    first.args.append(2)
    assert read(result_id).args == [[1]]


def test_retried_task_shows_every_attempt(backend: ThreadmillTaskBackend, read: Read) -> None:
    task_id = echo.enqueue(1).id
    first = reserve(backend, task_id)
    backend.broker.start("worker-1", [Start(lease=first, started_ms=1_700_000_000_000)])
    retry = Finish(
        lease=first,
        outcome=Outcome.RETRY,
        value=error_json(ValueError("try again")),
        started_ms=1_700_000_000_000,
        finished_ms=1_700_000_001_000,
    )
    assert backend.broker.finish("worker-1", [retry]) == []
    assert read(task_id).status == TaskResultStatus.READY
    second = reserve(backend, task_id)
    backend.broker.start("worker-2", [Start(lease=second, started_ms=1_700_000_002_000)])
    result = read(task_id)
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == ["worker-1", "worker-2"]
    assert result.attempts == 2
    assert result.started_at == from_ms(1_700_000_000_000)
    assert result.last_attempted_at == from_ms(1_700_000_002_000)
    [error] = result.errors
    assert error.exception_class is ValueError


def test_delayed_task_keeps_run_after(read: Read) -> None:
    when = datetime(2100, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    result = read(echo.using(run_after=when).enqueue(1).id)
    assert result.status == TaskResultStatus.READY
    assert result.task.run_after == when


@override_settings(USE_TZ=False)
def test_naive_datetimes_without_use_tz(backend: ThreadmillTaskBackend, read: Read) -> None:
    when = datetime(2999, 1, 1, 12, 0)
    enqueued = echo.using(run_after=when).enqueue(1)
    result = read(enqueued.id)
    assert result.task.run_after == when
    assert result.enqueued_at is not None
    assert timezone.is_naive(result.enqueued_at)


def test_get_results_reads_many_in_order_with_none_for_the_unknown(
    backend: ThreadmillTaskBackend,
) -> None:
    first, second = echo.enqueue(1), echo.enqueue(2)
    unknown = f"{'0' * 32}@default"

    found = backend.pipeline.get_results([second.id, unknown, first.id, "no-queue-in-it"])

    assert [r.id if r else None for r in found] == [second.id, None, first.id, None]
    assert found[0] is not None
    assert found[0].args == [2]


def test_a_result_reads_back_after_its_queue_left_queues(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Reading a result checks no setting: results stored on a queue since removed from
    QUEUES keep their status, return value and errors (a PayloadError said they cannot run)."""
    done = add.using(queue_name="emails").enqueue(2, 3)
    succeed(backend, done.id, 5)
    failed = echo.using(queue_name="emails").enqueue(1)
    fail(backend, failed.id, ValueError("disk full"))
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"] = {**setting["default"], "QUEUES": ["default", "reports"]}  # type: ignore[dict-item]
    _rebuilt_task.cache_clear()  # as in a process started after the change: nothing read yet

    with override_settings(TASKS=setting):
        later = task_backends["default"]
        assert isinstance(later, ThreadmillTaskBackend)
        with pytest.raises(InvalidTask, match="Queue 'emails' is not valid"):
            echo.using(queue_name="emails")  # enqueueing there is refused
        results = [
            later.get_result(done.id),
            asyncio.run(later.aget_result(done.id)),
            *later.pipeline.get_results([done.id]),
        ]
        failure = later.get_result(failed.id)

    for result in results:
        assert result is not None
        assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 5)
        assert result.task.queue_name == "emails"
    assert failure.status == TaskResultStatus.FAILED
    assert [error.exception_class_path for error in failure.errors] == ["builtins.ValueError"]
