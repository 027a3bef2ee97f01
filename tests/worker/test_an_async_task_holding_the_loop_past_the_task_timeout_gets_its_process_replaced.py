"""An ``async def`` task whose blocking call holds the event loop past --task-timeout gets its
process replaced: the loop monitor logs an ERROR naming it, and the process recycles, so a fresh
one serves the queues while the call goes on (docs/worker.md, What blocks the loop).

Nothing watched the loop's tasks against the timeout: the coroutine's own deadline is a timer on
the loop it holds. A sync socket read without a timeout held every async task of the process
for good, with no line logged and the health probe green (at 13 s of a 40 s ``time.sleep`` under
``--task-timeout 3``, a later ``nap(0.01)`` was still READY).

The real ``threadmill_worker`` command in a subprocess. The task blocks on a FIFO, which stays
shut until the test opens its other end: no timing involved.
"""

import os
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task
from tests.support import Command, release_fifo, wait_until

from .async_tasks import nap

WAIT_S = 30.0  # a bound on each wait, never reached when the test passes


@task
async def holds_the_loop(fifo: str, runs: str) -> str:
    """Say which process runs it, then block the loop (a sync read, the mistake under test)
    until something opens ``fifo`` for writing and closes it."""
    with open(runs, "a") as out:
        out.write(f"{os.getpid()}\n")
    with open(fifo) as held:  # blocks in open() until a writer comes, then reads to its close
        return held.read()


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


def test_a_later_async_task_runs_while_the_held_one_ends_timed_out_and_nothing_runs_twice(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    fifo, runs, naps = tmp_path / "fifo", tmp_path / "runs", tmp_path / "naps"
    os.mkfifo(fifo)
    held = holds_the_loop.enqueue(str(fifo), str(runs))
    worker = start_worker("--task-timeout", "1", "--grace-period", "60")
    try:
        wait_until(runs.exists, "the held task running", WAIT_S)
        later = nap.enqueue(0.01, str(naps))
        wait_until(
            lambda: status(later) == TaskResultStatus.SUCCESSFUL,
            "the later async task succeeding while the loop is held",
            WAIT_S,
        )
        assert status(held) == TaskResultStatus.RUNNING  # its call still holds the old loop
        worker.wait_for_log(
            rf"ERROR .*Event loop held past --task-timeout task_id={held.id} "
            rf"path={__name__}.holds_the_loop for_ms=\d+ timeout_s=1"
        )
        [held_pid] = runs.read_text().split()
        assert naps.read_text().split() != [held_pid]  # run by the replacement
        assert release_fifo(fifo), worker.log
        wait_until(lambda: status(held) == TaskResultStatus.FAILED, "the held task ending", WAIT_S)
        worker.wait_for_log(rf"Worker process recycled slot=0 pid={held_pid}")
        worker.signal()
        assert worker.wait(WAIT_S) == 0, worker.log
    finally:
        release_fifo(fifo)  # a process the test gave up on ends its read, not left holding it
    assert [error.exception_class_path for error in held.errors] == [
        "django_threadmill.exceptions.TaskTimeout"
    ]
    assert held.attempts == later.attempts == 1
    assert len(runs.read_text().split()) == len(naps.read_text().split()) == 1
    assert "Worker process died" not in worker.log
