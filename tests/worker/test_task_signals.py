"""task_started and task_finished: sent to every receiver that can hear them, skipped otherwise.

The worker's executor runs in this process here, on a task acquired from the test's Redis.
"""

import logging
from dataclasses import fields
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import (
    TASKS_LOGGER_NAME,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)
from django_threadmill.worker.executor import Executor
from testproject.example.tasks import echo, fail

# The executor closes stale database connections per task, as a worker does.
pytestmark = pytest.mark.django_db


def run_one(backend: ThreadmillTaskBackend) -> Outcome:
    [reservation] = backend.broker.acquire("default", 1).reservations
    return (
        Executor("signals-worker", backend.alias, type(backend)).run(reservation, now_ms()).outcome
    )


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the sends of both signals, whoever receives them."""
    sent: list[str] = []
    for name, signal in (("started", task_started), ("finished", task_finished)):
        original = signal.send_robust

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            sent.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(signal, "send_robust", counted)
    return sent


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_a_project_receiver_gets_both_signals_with_the_exact_result(
    backend: ThreadmillTaskBackend, tasks_logger_at: None
) -> None:
    seen: list[tuple[str, TaskResultStatus, list[Any]]] = []

    def on_started(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(("started", task_result.status, task_result.args))

    def on_finished(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(("finished", task_result.status, [task_result.return_value]))

    result = echo.enqueue("hello")
    task_started.connect(on_started)
    task_finished.connect(on_finished)
    try:
        assert run_one(backend) is Outcome.SUCCESSFUL
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)

    assert result.id
    assert seen == [
        ("started", TaskResultStatus.RUNNING, ["hello"]),
        ("finished", TaskResultStatus.SUCCESSFUL, ["hello"]),
    ]


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("text",), {}),
        ((), {"value": 2.5}),
        (([1, [2, None]],), {}),
        ((), {"value": {"a": [1, {"b": True}]}}),
    ],
    ids=["flat", "flat-kwargs", "nested", "nested-kwargs"],
)
def test_the_running_result_equals_the_one_djangos_constructor_builds(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, args: Any, kwargs: Any
) -> None:
    """Flat arguments skip TaskResult's normalising pass (records.task_result): same result."""
    seen: list[tuple[TaskResult, TaskResult, bool]] = []

    def on_started(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        init = {f.name: getattr(task_result, f.name) for f in fields(TaskResult) if f.init}
        constructed = TaskResult(**init)
        # Compared now, as the worker goes on to finish this result; asserted below, as
        # send_robust would only log a failed assertion here.
        seen.append((task_result, constructed, task_result == constructed))

    echo.enqueue(*args, **kwargs)
    task_started.connect(on_started)
    try:
        assert run_one(backend) is Outcome.SUCCESSFUL
    finally:
        task_started.disconnect(on_started)

    [(running, constructed, equal_at_start)] = seen
    assert equal_at_start
    assert (constructed.args, constructed.kwargs) == (list(args), kwargs)
    assert constructed.status is TaskResultStatus.RUNNING
    assert constructed.worker_ids == ["signals-worker"]
    assert constructed.last_attempted_at == constructed.started_at  # a first attempt
    assert constructed.enqueued_at <= constructed.started_at
    assert (constructed.finished_at, constructed.errors) == (None, [])
    assert (constructed.task, constructed.backend) == (echo, backend.alias)
    assert running.status is TaskResultStatus.SUCCESSFUL


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_with_only_djangos_quiet_log_receivers_a_success_sends_nothing(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, sends: list[str]
) -> None:
    echo.enqueue(1)

    assert run_one(backend) is Outcome.SUCCESSFUL
    assert sends == []


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_a_failure_is_sent_since_djangos_receiver_logs_it_at_error(
    backend: ThreadmillTaskBackend,
    tasks_logger_at: None,
    sends: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = fail.enqueue("on purpose")

    with caplog.at_level(logging.WARNING, logger=TASKS_LOGGER_NAME):
        assert run_one(backend) is Outcome.FAILED

    assert sends == ["finished"]
    [line] = [r for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert line.levelno == logging.ERROR
    assert result.id in line.getMessage()


@pytest.mark.parametrize("tasks_logger_at", [logging.INFO], indirect=True)
def test_a_logger_that_prints_info_gets_djangos_lines(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, caplog: pytest.LogCaptureFixture
) -> None:
    result = echo.enqueue(1)

    with caplog.at_level(logging.INFO, logger=TASKS_LOGGER_NAME):
        assert run_one(backend) is Outcome.SUCCESSFUL

    lines = [r.getMessage() for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert [line.split(" state=")[1] for line in lines if result.id in line] == [
        "RUNNING",
        "SUCCESSFUL",
    ]


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_a_failing_receiver_is_logged_and_the_task_still_succeeds(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    echo.enqueue(1)
    task_started.connect(broken)
    try:
        assert run_one(backend) is Outcome.SUCCESSFUL
    finally:
        task_started.disconnect(broken)

    assert any("Signal receiver failed" in r.getMessage() for r in caplog.records)
