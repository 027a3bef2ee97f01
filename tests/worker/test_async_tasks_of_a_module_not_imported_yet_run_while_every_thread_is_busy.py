"""Async tasks of a module the worker process never imported run on its event loop while sync
tasks hold every worker thread: in a fresh process, in one a recycle started (its record of
lanes empty), and once a project's task paths outnumbered that record (1,024 paths).

A task's lane is known once its module was imported, and the prefetcher imports nothing: the
first task of each such path went to the worker threads to be sorted, and with it every task
of its path behind it. With 2 threads waiting on a file, 200 async tasks enqueued then ran none
in 10 s, and all in 0.2 s once the file was made. Enqueue marks an ``async def`` task in its
payload, and the event loop sorts such a task itself, importing its module in its executor.
"""

import os
from collections.abc import Callable
from pathlib import Path

from django_threadmill.compat import Task, TaskResult, TaskResultStatus, task
from tests.support import Command, wait_until
from tests.worker import tasks

ASYNC_TASKS = 200
THREADS = 2
MAX_TASKS = ASYNC_TASKS + THREADS + 1  # a process recycles after its first tasks, not the next
PATHS = 1025  # one past the lanes a process keeps (worker/lanes.py, MOST_PATHS)


@task
async def note_pid() -> int:
    """Return the pid of the process that ran it, from its event loop."""
    return os.getpid()


def _numbered(n: int) -> Task:
    """Return an ``async def`` task of a path of its own (``numbered_<n>``)."""

    async def numbered() -> int:
        return os.getpid()

    numbered.__name__ = numbered.__qualname__ = f"numbered_{n}"
    return task(numbered)


for _n in range(PATHS):
    globals()[f"numbered_{_n}"] = _numbered(_n)


def state_of(results: list[TaskResult], status: TaskResultStatus) -> bool:
    """Tell whether every one of ``results`` is in ``status`` (read afresh)."""
    for result in results:
        result.refresh()
    return all(result.status == status for result in results)


def run_async_while_threads_wait(
    worker: Command, gate: Path, enqueue: Callable[[], TaskResult]
) -> None:
    """Hold every thread of ``worker``'s process on sync tasks, run ``ASYNC_TASKS`` async
    tasks from ``enqueue`` meanwhile, then let the sync tasks end."""
    held = [tasks.wait_for_file.enqueue(str(gate)) for _ in range(THREADS)]
    wait_until(lambda: state_of(held, TaskResultStatus.RUNNING), "every thread held")
    results = [enqueue() for _ in range(ASYNC_TASKS)]
    wait_until(
        lambda: state_of(results, TaskResultStatus.SUCCESSFUL),
        f"the async tasks running while the threads are held\n{worker.log}",
    )
    assert state_of(held, TaskResultStatus.RUNNING)
    assert {result.return_value for result in results} == {worker.child_pids()[-1]}
    gate.touch()
    wait_until(lambda: state_of(held, TaskResultStatus.SUCCESSFUL), "the held threads freed")


def stop(worker: Command) -> None:
    worker.signal()
    assert worker.wait() == 0, worker.log


def test_in_a_fresh_process(start_worker: Callable[..., Command], tmp_path: Path) -> None:
    worker = start_worker("--threads", str(THREADS))
    run_async_while_threads_wait(worker, tmp_path / "gate", note_pid.enqueue)
    stop(worker)


def test_in_a_process_a_recycle_started(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    first = [note_pid.enqueue() for _ in range(MAX_TASKS)]
    worker = start_worker("--threads", str(THREADS), "--max-tasks", str(MAX_TASKS))
    wait_until(lambda: len(worker.child_pids()) == 2, "the process recycled after its tasks")
    # The replacement starts as the recycle begins: the last task's outcome may still be on
    # its way from the recycling process's ack writer.
    wait_until(lambda: state_of(first, TaskResultStatus.SUCCESSFUL), "the first tasks recorded")
    run_async_while_threads_wait(worker, tmp_path / "gate", note_pid.enqueue)
    stop(worker)


def test_past_the_paths_whose_lane_a_process_keeps(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    numbered: list[Task] = [globals()[f"numbered_{n}"] for n in range(PATHS)]
    worker = start_worker("--threads", str(THREADS))
    each_once = [each.enqueue() for each in numbered]  # the last starts the record afresh
    wait_until(lambda: state_of(each_once, TaskResultStatus.SUCCESSFUL), "each path run once")
    run_async_while_threads_wait(worker, tmp_path / "gate", numbered[0].enqueue)
    stop(worker)
