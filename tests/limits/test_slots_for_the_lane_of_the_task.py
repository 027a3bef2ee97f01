"""A process reserves a limited queue's tasks only for free runners of the lane they run in
(docs/schedules.md, Per-queue limits).

Counted together, a process's threads and event loop made room for a sync task behind a busy
thread once an async task of any queue had come (and for an async task behind a full loop
beside a free thread): the task held the queue's second slot in that process's buffer, and a
queue of ``concurrency: 2`` served by two one-thread processes ran one task at a time, as
before processes reserved only for free runners.
"""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResult, TaskResultStatus
from tests.support import Command, wait_until

from .tasks import ahold_until, astamp, hold_until

TWO_SLOTS = {"queue_limits": {"reports": {"concurrency": 2}}}


def run_an_async_task(backend: ThreadmillTaskBackend, log: Path) -> None:
    """Have the worker run an async task of another queue: its event loop's runners count."""
    stamped = backend.enqueue(astamp, (str(log),), {})
    done = lambda: stamped.refresh() or stamped.status == TaskResultStatus.SUCCESSFUL  # noqa: E731
    wait_until(done, "the async task ran")


def running(results: list[TaskResult]) -> int:
    """Return how many of ``results`` are running now."""
    for result in results:
        result.refresh()
    return sum(result.status == TaskResultStatus.RUNNING for result in results)


@pytest.mark.parametrize(
    ("holder", "room"),
    [(hold_until, ("--threads", "1")), (ahold_until, ("--async-concurrency", "1"))],
    ids=["sync-task-beside-the-event-loop", "async-task-beside-a-thread"],
)
def test_a_second_process_runs_the_task_the_first_has_no_runner_of_its_lane_for(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    holder: Task,
    room: tuple[str, str],
) -> None:
    release = tmp_path / "release"
    queues = ("--queue", "reports", "--queue", "emails")
    workers = [
        start_worker("--threads", "1", "--async-concurrency", "1", *queues, options=TWO_SLOTS)
    ]
    try:
        run_an_async_task(backend, tmp_path / "stamps.log")
        held = [holder.enqueue(str(tmp_path / f"holding-{n}"), str(release)) for n in range(2)]
        wait_until(lambda: running(held) == 1, "the first process ran one of the two")
        workers.append(start_worker(*room, *queues, options=TWO_SLOTS))
        wait_until(lambda: running(held) == 2, "a second process ran the other beside it")
    finally:
        release.touch()
        for worker in workers:
            worker.signal(signal.SIGTERM)
            assert worker.wait() == 0, worker.log
