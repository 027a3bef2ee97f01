"""ThreadmillTaskBackend.enqueue / aenqueue: validate, store once, send task_enqueued."""

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import queue_of
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.testing import drain
from testproject.example.tasks import add, async_add, attempt_info, echo, send_welcome
from tests.backend.conftest import Enqueue


def stored(
    redis_client: redis.Redis, backend: ThreadmillTaskBackend, task_id: str
) -> dict[str, str]:
    key = backend.broker.record_key(task_id)
    assert key is not None
    return redis_client.hgetall(key)


def test_backend_declares_every_capability(backend: ThreadmillTaskBackend) -> None:
    assert backend.supports_defer
    assert backend.supports_async_task
    assert backend.supports_get_result
    assert backend.supports_priority


def test_enqueue_returns_a_ready_result(enqueue: Enqueue) -> None:
    before = datetime.now(UTC)
    result = enqueue(add, 2, b=(3, 4))
    assert result.status == TaskResultStatus.READY
    assert result.task is add
    assert result.args == [2]
    assert result.kwargs == {"b": [3, 4]}
    assert result.backend == "default"
    assert queue_of(result.id) == "default"
    assert result.enqueued_at is not None
    assert result.enqueued_at >= before.replace(microsecond=before.microsecond // 1000 * 1000)
    assert (result.started_at, result.finished_at, result.last_attempted_at) == (None, None, None)
    assert (result.errors, result.worker_ids) == ([], [])
    assert not result.is_finished


def test_enqueue_stores_the_payload_once(
    enqueue: Enqueue, redis_client: redis.Redis, backend: ThreadmillTaskBackend
) -> None:
    result = enqueue(send_welcome, "ada@example.com")
    record = stored(redis_client, backend, result.id)
    assert json.loads(record["payload"]) == {
        "path": "testproject.example.tasks.send_welcome",
        "args": ["ada@example.com"],
        "kwargs": {},
        "priority": 10,
        "run_after_ms": None,
    }
    assert record["state"] == "ready"
    assert queue_of(result.id) == "emails"
    ready = backend.broker.queue_keys("emails").ready
    assert redis_client.zrange(ready, 0, -1) == [result.id]


def test_ids_are_unique(enqueue: Enqueue) -> None:
    assert len({enqueue(echo, n).id for n in range(20)}) == 20


def test_run_after_defers_the_task(
    enqueue: Enqueue, redis_client: redis.Redis, backend: ThreadmillTaskBackend
) -> None:
    when = datetime(2999, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    result = enqueue(echo.using(run_after=when), "later")
    assert result.task.run_after == when
    delayed = backend.broker.queue_keys("default").delayed
    assert redis_client.zrange(delayed, 0, -1, withscores=True) == [
        (result.id, when.timestamp() * 1000)
    ]


def test_run_after_in_the_past_is_ready_at_once(
    enqueue: Enqueue, redis_client: redis.Redis, backend: ThreadmillTaskBackend
) -> None:
    result = enqueue(echo.using(run_after=datetime.now(UTC) - timedelta(hours=1)), 1)
    ready = backend.broker.queue_keys("default").ready
    assert redis_client.zrange(ready, 0, -1) == [result.id]


def test_run_after_at_the_epoch_reads_back(
    enqueue: Enqueue, backend: ThreadmillTaskBackend
) -> None:
    """0 ms since the epoch read back as no run_after: the stored 0 was taken for absent."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    result = enqueue(echo.using(run_after=epoch), 1)
    read = backend.get_result(result.id)
    assert read.task.run_after == epoch
    assert read.task == result.task


def test_run_after_at_the_last_ms_a_datetime_can_hold_reads_back(
    enqueue: Enqueue, backend: ThreadmillTaskBackend
) -> None:
    """The edge of what enqueue accepts, given in a zone west of UTC: 9999-12-31 23:59:59.999
    UTC is stored and read back (one ms later is refused, tests/enqueue/test_errors.py)."""
    last = datetime(9999, 12, 31, 18, 59, 59, 999000, tzinfo=timezone(timedelta(hours=-5)))
    result = enqueue(echo.using(run_after=last), 1)
    read = backend.get_result(result.id)
    assert read.task.run_after == last
    assert read.status == TaskResultStatus.READY
    assert drain(wait_for_delayed=0) == 0  # it waits in the delayed index


@pytest.mark.parametrize("priority", [-100, 0, 100])
def test_priority_is_stored(
    enqueue: Enqueue, redis_client: redis.Redis, backend: ThreadmillTaskBackend, priority: int
) -> None:
    result = enqueue(echo.using(priority=priority), 1)
    assert result.task.priority == priority
    payload = json.loads(stored(redis_client, backend, result.id)["payload"])
    assert payload["priority"] == priority


def test_a_whole_float_priority_is_stored_as_an_int(
    enqueue: Enqueue, redis_client: redis.Redis, backend: ThreadmillTaskBackend
) -> None:
    """Django accepts priority=5.0: stored as 5.0, the task failed as corrupted when it ran and
    get_result raised PayloadError."""
    result = enqueue(echo.using(priority=5.0), 1)  # type: ignore[arg-type]
    assert (result.task.priority, type(result.task.priority)) == (5, int)
    payload = json.loads(stored(redis_client, backend, result.id)["payload"])
    assert (payload["priority"], type(payload["priority"])) == (5, int)
    assert backend.get_result(result.id).task.priority == 5

    assert drain() == 1
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 1)


def test_context_and_async_tasks_are_accepted(enqueue: Enqueue) -> None:
    assert enqueue(attempt_info).task.takes_context
    assert enqueue(async_add, 1, 2).status == TaskResultStatus.READY


def test_signal_names_the_backend_class(
    enqueue: Enqueue, enqueued: list[tuple[type, TaskResult]]
) -> None:
    result = enqueue(echo, "signal")
    assert enqueued == [(ThreadmillTaskBackend, result)]


def test_no_signal_when_enqueue_fails(
    enqueue: Enqueue, enqueued: list[tuple[type, TaskResult]]
) -> None:
    with pytest.raises(TypeError):
        enqueue(echo, {1, 2})
    assert enqueued == []


def test_higher_priority_is_acquired_first_then_fifo(
    enqueue: Enqueue, backend: ThreadmillTaskBackend
) -> None:
    order = [
        enqueue(echo.using(priority=priority), n).id
        for n, priority in enumerate([0, 20, -20, 20, 0])
    ]
    acquired = [r.lease.task_id for r in backend.broker.acquire("default", 10).reservations]
    assert acquired == [order[1], order[3], order[0], order[4], order[2]]
