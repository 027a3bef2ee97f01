"""django.tasks' signals where no caller waits for them: the reaper, a commit, the scheduler.

Each sends for a task that is stored (or settled) already, so a receiver sees the whole
result, and one that raises is logged, never raised into code that cannot act on it.
"""

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from django.db import transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.schedules.scheduler import Scheduler
from django_threadmill.worker.reaper import reap_once
from testproject.example.tasks import echo
from tests.lifecycle.support import run, wait_for_expiry
from tests.lifecycle.tasks import plain
from tests.support import HandClock

SCHEDULES = {"tick": {"task": "tests.schedules.tasks.report", "every": 60}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0, "schedules": SCHEDULES}


def collect(signal: Any) -> Iterator[list[TaskResult]]:
    seen: list[TaskResult] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result)

    signal.connect(receiver)
    yield seen
    signal.disconnect(receiver)


@pytest.fixture
def enqueued() -> Iterator[list[TaskResult]]:
    yield from collect(task_enqueued)


@pytest.fixture
def raising_for_first(enqueued: list[TaskResult]) -> Iterator[None]:
    """A task_enqueued receiver that raises for tasks whose first argument is "first"; it
    comes after ``enqueued``'s, which Signal.send reaches first."""

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if task_result.args[:1] == ["first"]:
            raise RuntimeError("receiver bug")

    task_enqueued.connect(receiver)
    yield
    task_enqueued.disconnect(receiver)


def test_task_finished_from_the_reaper_carries_the_enqueue_and_start_times(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    finished: list[TaskResult],
) -> None:
    """The reaper sent a result with enqueued_at, started_at and last_attempted_at None: a
    receiver that timed the attempt (finished_at - started_at) raised TypeError."""
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)

    assert reap_once(backend).failed == 1

    [sent] = finished
    stored = backend.get_result(task_id)
    assert sent.status == stored.status == TaskResultStatus.FAILED
    assert sent.enqueued_at is not None
    assert sent.started_at is not None
    assert (sent.enqueued_at, sent.started_at, sent.last_attempted_at, sent.finished_at) == (
        stored.enqueued_at,
        stored.started_at,
        stored.last_attempted_at,
        stored.finished_at,
    )
    assert sent.worker_ids == stored.worker_ids
    assert [e.exception_class_path for e in sent.errors] == [
        "django_threadmill.exceptions.LeaseExpired"
    ]


@pytest.mark.usefixtures("transactional_db", "raising_for_first")
def test_a_receiver_raising_at_the_commit_keeps_the_transactions_other_enqueues(
    backend: ThreadmillTaskBackend,
    enqueued: list[TaskResult],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The receiver's error was raised from the commit's on_commit callback: Django then
    runs none of the transaction's later callbacks, so the second task was never stored."""
    at_commit = echo.using(enqueue_on_commit=True)
    with transaction.atomic():
        first = at_commit.enqueue("first")
        second = at_commit.enqueue("second")
        many = backend.enqueue_many(at_commit, [(("third",), {}), (("fourth",), {})])

    announced = [first, second, *many]
    assert [backend.get_result(r.id).status for r in announced] == [TaskResultStatus.READY] * 4
    assert [r.id for r in enqueued] == [r.id for r in announced]
    [failure] = [r for r in caplog.records if r.name == "django_threadmill.observability.signals"]
    assert failure.levelno == logging.ERROR
    assert failure.getMessage().startswith("Signal receiver failed receiver=")
    assert failure.getMessage().endswith(f"task_id={first.id}")


@pytest.mark.usefixtures("raising_for_first")
def test_outside_a_commit_the_receivers_error_is_still_raised_to_the_caller(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    """As Django's own backends do: the caller's enqueue raises, the task is stored."""
    with pytest.raises(RuntimeError, match="receiver bug"):
        echo.enqueue("first")

    [result] = enqueued
    assert backend.get_result(result.id).status == TaskResultStatus.READY


def test_a_slot_whose_receiver_raises_is_logged_as_fired_not_as_failed(
    backend: ThreadmillTaskBackend,
    enqueued: list[TaskResult],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The scheduler logged "Schedule failed to fire" for a slot it had stored, and not
    "Schedule fired": an operator read a slot that runs as one that never would."""

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    task_enqueued.connect(receiver)
    try:
        with caplog.at_level(logging.INFO, logger="django_threadmill"):
            clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
            scheduler = Scheduler(backend.pipeline, clock)
            scheduler.fire_due()  # a new schedule starts with its next slot
            clock.now = datetime(2026, 3, 28, 12, 1, tzinfo=UTC)
            scheduler.fire_due()
    finally:
        task_enqueued.disconnect(receiver)

    [slot] = enqueued
    assert backend.get_result(slot.id).status == TaskResultStatus.READY
    assert "Schedule failed to fire" not in caplog.text
    assert f"Schedule fired schedule=tick slot=2026-03-28T12:01:00+00:00 task_id={slot.id}" in (
        caplog.text
    )
    assert "Signal receiver failed receiver=" in caplog.text
    assert f"task_id={slot.id}\nTraceback" in caplog.text
