"""Concurrency slots held only by tasks that run: a task past --task-timeout gives its slot
back, and a process reserves no more of a limited queue than it has runners free
(docs/schedules.md, Per-queue limits).

A sync task past its timeout is abandoned in its thread and an async one cancelled, both
recorded FAILED with TaskTimeout, and the queue's only slot goes to the next task.
"""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultStatus
from tests.support import Command, wait_until

from .tasks import ahold_until, hold_until, timed

ONE_SLOT = {"queue_limits": {"reports": {"concurrency": 1}}}
TWO_SLOTS = {"queue_limits": {"reports": {"concurrency": 2}}}
TASK_TIMEOUT = "django_threadmill.exceptions.TaskTimeout"


@pytest.mark.parametrize("holder", [hold_until, ahold_until], ids=["thread", "event-loop"])
def test_a_task_past_its_timeout_gives_its_slot_to_the_next_task(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    holder: Task,
) -> None:
    marker, release = tmp_path / "holding", tmp_path / "release"
    overdue = holder.enqueue(str(marker), str(release))  # holds the only slot for a minute
    waiting = timed.enqueue(str(tmp_path / "after.log"), 0)
    args = ("--queue", "reports", "--threads", "2", "--task-timeout", "1")
    worker = start_worker(*args, options=ONE_SLOT)
    done = lambda: waiting.refresh() or waiting.status == TaskResultStatus.SUCCESSFUL  # noqa: E731
    wait_until(done, "the task behind the overdue one ran")
    overdue.refresh()
    assert overdue.status == TaskResultStatus.FAILED
    assert [error.exception_class_path for error in overdue.errors] == [TASK_TIMEOUT]
    release.touch()  # the abandoned thread ends too
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_process_reserves_no_more_of_a_limited_queue_than_it_can_run(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """Two slots, two processes of one thread: the first reserved both (one task running, one
    waiting in its buffer behind it), the second was refused, and the queue ran one task at a
    time. Each process now reserves only for a runner it has free."""
    release = tmp_path / "release"
    for index in range(4):
        hold_until.enqueue(str(tmp_path / f"holding-{index}"), str(release))
    args = ("--processes", "2", "--threads", "1", "--queue", "reports")
    worker = start_worker(*args, options=TWO_SLOTS)
    try:
        holding = lambda: len(list(tmp_path.glob("holding-*")))  # noqa: E731
        wait_until(lambda: holding() == 2, "two tasks of the queue ran at once")
    finally:
        release.touch()
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log
