"""The django.tasks backend contract, as Django's own backend tests and django-tasks' state it:
validation messages, results in each state, signals, errors, and a task found at its path.

Runs on Django 6.x and on Django 5.2 with the django-tasks backport alike.
"""

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import (
    TASKS_LOGGER_NAME,
    InvalidTask,
    Task,
    TaskContext,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task,
    task_finished,
    task_started,
)
from django_threadmill.testing import drain
from tests.backend.conftest import Enqueue
from tests.conftest import tasks_setting


@task
def noop(*args: Any, **kwargs: Any) -> None:
    return None


@task
async def anoop(*args: Any, **kwargs: Any) -> None:
    return None


@task
def meaning_of_life() -> int:
    return 42


@task
def fails() -> None:
    raise ValueError("This task failed due to ValueError")


@task
async def afails() -> None:
    raise ValueError("This async task failed")


@task
def returns_a_function() -> Any:
    return lambda: True


@task(takes_context=True)
def own_id(context: TaskContext, attempt: int) -> str:
    assert context.attempt == attempt
    return context.task_result.id


def kept_under_another_name(value: int) -> int:
    return value


# Module level, so Django accepts it, but its path names the plain function: no worker finds it.
renamed = task(kept_under_another_name)


class Holder:
    @staticmethod
    def run() -> None:
        return None


# Module level too (Django checks for "<locals>" only), but its path does not import.
in_a_class = task(Holder.run)


@pytest.fixture(params=["refresh", "arefresh"])
def refresh(request: pytest.FixtureRequest) -> Callable[[TaskResult], None]:
    if request.param == "refresh":
        return lambda result: result.refresh()
    return lambda result: asyncio.run(result.arefresh())


def ran(result: TaskResult, refresh: Callable[[TaskResult], None]) -> TaskResult:
    """Run the queued tasks here (the worker's own loop), then refresh ``result``."""
    assert drain() >= 1
    refresh(result)
    return result


# Enqueue ----------------------------------------------------------------------------------


@pytest.mark.parametrize("task_of", [noop, anoop], ids=["sync", "async"])
def test_a_new_result_is_ready_and_not_attempted(enqueue: Enqueue, task_of: Task) -> None:
    result = enqueue(task_of, 1, two=(3,))
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished
    assert (result.started_at, result.last_attempted_at, result.finished_at) == (None, None, None)
    with pytest.raises(ValueError, match=r"^Task has not finished yet$"):
        _ = result.return_value
    assert result.task == task_of
    assert (result.args, result.kwargs) == ([1], {"two": [3]})
    assert (result.attempts, result.errors, result.worker_ids) == (0, [], [])
    assert result.backend == "default"


def test_enqueue_is_logged_on_the_tasks_logger(
    enqueue: Enqueue, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, TASKS_LOGGER_NAME):
        result = enqueue(noop)
    [line] = [r.getMessage() for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert "enqueued" in line
    assert result.id in line


def test_an_argument_that_is_not_json_is_refused_as_django_says(enqueue: Enqueue) -> None:
    with pytest.raises(TypeError, match=re.escape("Unsupported type: <class 'datetime.datetime'>")):
        enqueue(noop, datetime.now())


# Validation: Django's messages, word for word ---------------------------------------------


def test_a_function_not_at_module_level_is_refused() -> None:
    def local() -> None: ...

    for function in [any, local]:
        with pytest.raises(InvalidTask, match=r"^Task function must be defined at a module level"):
            task()(function)


def test_takes_context_needs_a_context_parameter() -> None:
    message = "Task takes context but does not have a first argument of 'context'."
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        task(takes_context=True)(meaning_of_life.func)


@pytest.mark.parametrize("priority", [-101, 101, 3.1])
def test_a_priority_out_of_range_or_not_whole_is_refused(priority: float) -> None:
    with pytest.raises(InvalidTask, match=r"^priority must be a whole number between -100 and 100"):
        noop.using(priority=priority)  # type: ignore[arg-type]


def test_the_priority_range_is_accepted_to_its_ends() -> None:
    assert [noop.using(priority=p).priority for p in (-100, 0, 100)] == [-100, 0, 100]


def test_a_naive_run_after_is_refused_under_use_tz() -> None:
    with pytest.raises(InvalidTask, match=r"^run_after must be an aware datetime\.$"):
        noop.using(run_after=datetime.now())


def test_a_queue_not_in_queues_is_refused() -> None:
    with pytest.raises(InvalidTask, match=r"^Queue 'queue-2' is not valid for backend\.$"):
        noop.using(queue_name="queue-2")


def test_enqueue_checks_the_queue_against_the_settings_of_the_day(
    enqueue: Enqueue, redis_url: str, key_prefix: str
) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"] = {**setting["default"], "QUEUES": ["queue-1"]}  # type: ignore[dict-item]
    with (
        override_settings(TASKS=setting),
        pytest.raises(InvalidTask, match=r"^Queue 'default' is not valid for backend\.$"),
    ):
        enqueue(noop)


def test_an_unknown_backend_alias_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"^The connection 'unknown' doesn't exist\.$"):
        noop.using(backend="unknown")


def test_using_makes_an_equal_new_task_and_leaves_the_old_one() -> None:
    again = noop.using()
    assert again == noop
    assert again is not noop
    later = noop.using(priority=10, queue_name="emails")
    assert (later.priority, later.queue_name) == (10, "emails")
    assert (noop.priority, noop.queue_name) == (0, "default")


def test_call_and_acall_run_the_function_here() -> None:
    """Our task class keeps Django's. (``call`` of an ``async def`` task is left out: asgiref
    keeps the thread it runs it on, which the leak guard would report.)"""
    assert meaning_of_life.call() == 42
    assert asyncio.run(meaning_of_life.acall()) == 42
    assert asyncio.run(anoop.acall()) is None


# A task found at its path ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_of", "why"),
    [
        (renamed, "it names a function, not this task"),
        (in_a_class, "it does not import: "),
    ],
    ids=["a-plain-function-there", "does-not-import"],
)
def test_a_task_no_worker_could_find_is_refused_at_enqueue(
    enqueue: Enqueue,
    backend: ThreadmillTaskBackend,
    enqueued: list[tuple[type, TaskResult]],
    task_of: Task,
    why: str,
) -> None:
    """Accepted, it was stored, and every attempt failed in the worker with NotATask (or
    TaskNotImportable), and get_result raised that instead of returning the result."""
    message = f"Task {task_of.module_path!r} is not found at its own path ({why}"
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}") as raised:
        enqueue(task_of, 1)
    assert "Decorate the function itself with @task" in str(raised.value)
    with pytest.raises(InvalidTask, match=re.escape(message)):
        backend.enqueue_many(task_of, [((), {})])
    assert enqueued == []
    assert drain(wait_for_delayed=0) == 0


def test_a_task_found_at_its_path_is_enqueued_in_any_of_its_variants(enqueue: Enqueue) -> None:
    for variant in [noop, noop.using(priority=5), noop.using(queue_name="emails")]:
        assert enqueue(variant).status == TaskResultStatus.READY


# Reading results ---------------------------------------------------------------------------


# Fixed ids, not uuid4(): each pytest-xdist process must collect the same parameters.
@pytest.mark.parametrize(
    "result_id",
    ["123", "3f2b8c1e-7d4a-4e9b-a6c5-0d1e2f3a4b5c", "3f2b8c1e7d4a4e9ba6c50d1e2f3a4b5c@default"],
)
def test_an_unknown_id_does_not_exist_and_says_which(result_id: str) -> None:
    for read in [
        noop.get_backend().get_result,
        noop.get_result,
        lambda found: asyncio.run(noop.get_backend().aget_result(found)),
        lambda found: asyncio.run(noop.aget_result(found)),
    ]:
        with pytest.raises(TaskResultDoesNotExist, match=f"^{re.escape(result_id)}$"):
            read(result_id)


def test_a_refreshed_ready_result_keeps_its_fields(
    enqueue: Enqueue, refresh: Callable[[TaskResult], None]
) -> None:
    """Only enqueued_at moves: the record's is on the Redis clock (docs/lifecycle.md)."""
    result = enqueue(noop, 1, two=3)
    before = asdict(result)
    refresh(result)
    after = asdict(result)
    assert result.enqueued_at is not None
    assert abs(result.enqueued_at - before["enqueued_at"]) < timedelta(seconds=1)
    assert {**after, "enqueued_at": None} == {**before, "enqueued_at": None}


@pytest.mark.parametrize("task_of", [noop, anoop], ids=["sync", "async"])
def test_a_successful_result_has_every_time_and_one_attempt(
    refresh: Callable[[TaskResult], None], task_of: Task
) -> None:
    result = ran(task_of.enqueue(1, two=3), refresh)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished
    assert result.enqueued_at is not None
    assert result.started_at is not None
    assert result.finished_at is not None
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at
    assert result.return_value is None
    assert (result.attempts, len(result.worker_ids), result.errors) == (1, 1, [])
    assert result.task == task_of
    assert (result.args, result.kwargs) == ([1], {"two": 3})


def test_the_return_value_reads_back(refresh: Callable[[TaskResult], None]) -> None:
    assert ran(meaning_of_life.enqueue(), refresh).return_value == 42


@pytest.mark.parametrize(
    ("task_of", "message"),
    [(fails, "This task failed due to ValueError"), (afails, "This async task failed")],
    ids=["sync", "async"],
)
def test_a_failed_result_has_the_error_as_django_records_it(
    refresh: Callable[[TaskResult], None], task_of: Task, message: str
) -> None:
    result = ran(task_of.enqueue(), refresh)
    assert result.status == TaskResultStatus.FAILED
    assert result.is_finished
    with pytest.raises(ValueError, match=r"^Task failed$"):
        _ = result.return_value
    assert result.started_at is not None
    assert result.finished_at is not None
    assert result.started_at <= result.finished_at
    assert result.attempts == 1
    [error] = result.errors
    assert error.exception_class is ValueError
    assert error.exception_class_path == "builtins.ValueError"
    assert error.traceback.startswith("Traceback (most recent call last):\n")
    assert error.traceback.endswith(f"ValueError: {message}\n")


def test_a_return_value_that_is_not_json_fails_the_task(
    refresh: Callable[[TaskResult], None],
) -> None:
    result = ran(returns_a_function.enqueue(), refresh)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is TypeError
    assert "Unsupported type" in error.traceback


def test_a_task_that_takes_the_context_sees_its_own_result(
    refresh: Callable[[TaskResult], None],
) -> None:
    result = ran(own_id.enqueue(1), refresh)
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == result.id


# Signals and Django's log lines ------------------------------------------------------------


def test_started_and_finished_are_sent_as_django_sends_them() -> None:
    seen: list[tuple[str, type, TaskResultStatus, int, bool, set[str]]] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        name = "started" if kwargs["signal"] is task_started else "finished"
        finished = task_result.finished_at is not None
        seen.append((name, sender, task_result.status, task_result.attempts, finished, {*kwargs}))

    task_started.connect(receiver)
    task_finished.connect(receiver)
    try:
        meaning_of_life.enqueue()
        fails.enqueue()
        assert drain() == 2
    finally:
        task_started.disconnect(receiver)
        task_finished.disconnect(receiver)
    backend = ThreadmillTaskBackend
    assert seen == [
        ("started", backend, TaskResultStatus.RUNNING, 1, False, {"signal"}),
        ("finished", backend, TaskResultStatus.SUCCESSFUL, 1, True, {"signal"}),
        ("started", backend, TaskResultStatus.RUNNING, 1, False, {"signal"}),
        ("finished", backend, TaskResultStatus.FAILED, 1, True, {"signal"}),
    ]


# On Django 5.2 an async task's sync receivers saw no exception in their thread, and the
# backport's line printed "NoneType: None" for its traceback.
@pytest.mark.parametrize("task_of", [fails, afails], ids=["sync", "async"])
def test_a_failure_is_logged_by_django_with_its_traceback(
    caplog: pytest.LogCaptureFixture, task_of: Task
) -> None:
    with caplog.at_level(logging.DEBUG, TASKS_LOGGER_NAME):
        result = task_of.enqueue()
        drain()
    lines = [r for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert [r.getMessage().rsplit(" ", 1)[-1] for r in lines] == [
        f"backend={result.backend}",
        "state=RUNNING",
        "state=FAILED",
    ]
    assert all(result.id in r.getMessage() for r in lines)
    failed = lines[-1]
    assert failed.levelno == logging.ERROR
    assert failed.exc_info is not None
    assert failed.exc_info[0] is ValueError
    assert "NoneType: None" not in caplog.text
