"""Tasks that break the process they run in, not just their own attempt: they end it with an
exit code of the worker's own, fork it on the event loop, or break its logging. Each is
recorded (or left to the reaper, as a death is), and every other task runs once
(docs/worker.md, How the loop works; Exit codes).

Every test runs the real ``threadmill_worker`` command in a subprocess: the behaviour is the
process's. The tasks are at module level so worker processes import them.
"""

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command
from tests.worker import tasks


class Broken(Exception):
    """What a task raises on purpose."""


class BreakingHandler(logging.Handler):
    """A log handler whose ``emit`` raises, as a half-configured integration's can."""

    def emit(self, record: logging.LogRecord) -> None:
        raise RuntimeError("this handler cannot write")


@task
def exits_with(code: int) -> None:
    os._exit(code)  # the mistake under test: a code the worker gives a meaning to


@task
def fails() -> None:
    raise Broken("failed on purpose")


@task
async def afails() -> None:
    raise Broken("failed on purpose")


@task
async def forks_and_lets_the_child_return(log: str, yields: bool) -> int:
    """Fork on the event loop; the child returns into the worker (no ``os._exit``), after
    yielding to the loop first if ``yields``."""
    child = os.fork()
    if child == 0:
        with open(log, "a") as lines:
            lines.write("child\n")
        if yields:
            await asyncio.sleep(0)
        return 0
    await asyncio.to_thread(os.waitpid, child, 0)
    return child


@task
async def acount_run(log_path: str, value: int) -> int:
    """Append ``value`` to ``log_path`` after a turn of the loop: executions counted outside
    Redis."""
    await asyncio.sleep(0)
    with open(log_path, "a") as log:
        log.write(f"{value}\n")
    return value


@task
def closes_stderr() -> str:
    sys.stderr.close()  # the mistake under test, as a ``with sys.stderr:`` block makes
    return "closed"


@task
def adds_a_breaking_handler() -> str:
    logging.getLogger("django_threadmill").addHandler(BreakingHandler())
    return "added"


@pytest.mark.parametrize("code", [0, 3, 4, 6])
def test_a_task_ending_its_process_with_a_code_of_the_workers_own_is_a_death(
    start_worker: Callable[..., Command], code: int
) -> None:
    """The supervisor read a task's os._exit(0) as a stop (a burst ended 0 with tasks left
    unrun), 3 as a recycle, 6 as a stop Redis missed, and 4 as Redis refusing the
    credentials: every process stopped, the command exited 4 and was not restarted."""
    exiting = exits_with.enqueue(code)
    after = [tasks.square.enqueue(n) for n in range(3)]

    worker = start_worker("--burst", "--prefetch", "1")
    assert worker.wait(60) == 5, worker.log  # a worker process died during the burst

    assert f"status=exit code {code}, not the worker's own (a task's os._exit()" in worker.log
    ran = []
    for n, result in enumerate(after):
        result.refresh()
        if result.status == TaskResultStatus.SUCCESSFUL:
            assert result.return_value == n * n
            ran.append(n)
    # The dying process may have reserved one (--prefetch 1) before the exit: it waits for its
    # lease, as exit code 5 says; the replacement ran the others.
    assert len(ran) >= len(after) - 1, worker.log
    exiting.refresh()  # reserved or running: its lease lapses and the reaper settles it
    assert exiting.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING)


@pytest.mark.parametrize(
    ("yields", "timeout"),
    [(False, ()), (True, ("--task-timeout", "30"))],
    ids=["returns", "yields-under-a-timeout"],
)
def test_an_async_tasks_forked_child_returning_to_the_loop_ends_there(
    start_worker: Callable[..., Command], tmp_path: Path, yields: bool, timeout: tuple[str, ...]
) -> None:
    """The child went on as a copy of the event loop lane: it ran the copies of the tasks on
    it, lived on as an orphan, and its parent's wait for it held the burst for good."""
    runs = tmp_path / "runs.log"
    forking = forks_and_lets_the_child_return.enqueue(str(runs), yields)
    after = [acount_run.enqueue(str(runs), n) for n in range(4)]

    worker = start_worker("--burst", *timeout)
    assert worker.wait(60) == 0, worker.log

    forking.refresh()
    assert forking.return_value > 0  # the parent's return: the child's never reached Redis
    lines = runs.read_text().split()
    assert sorted(line for line in lines if line != "child") == ["0", "1", "2", "3"]  # once each
    for result in after:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_a_task_that_closes_stderr_leaves_the_worker_serving(
    start_worker: Callable[..., Command],
) -> None:
    """The next log line raised ValueError into the thread that wrote it: a failed task's
    worker thread died, then the process's stop, which left its threads running: the process
    hung, its lease keeper renewing the tasks it held, for good."""
    closing = closes_stderr.enqueue()
    failing = [fails.enqueue(), afails.enqueue()]
    after = tasks.square.enqueue(3)

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    closing.refresh()
    assert closing.return_value == "closed"
    for result in failing:
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        assert [e.exception_class_path for e in result.errors] == [f"{__name__}.Broken"]
    after.refresh()
    assert after.return_value == 9


def test_a_worker_process_whose_stop_raises_exits_instead_of_hanging(
    start_worker: Callable[..., Command],
) -> None:
    """A log handler that raises kills the thread that logs, then the stop: the process hung
    in multiprocessing's wait for the threads the stop never stopped. It now exits 5, as a
    process whose own code failed, the supervisor starts a fresh one, and that one runs the rest."""
    breaking = adds_a_breaking_handler.enqueue()
    failing = fails.enqueue()
    after = tasks.square.enqueue(3)

    worker = start_worker("--threads", "1", "--prefetch", "1", "--burst", "--grace-period", "1")
    assert worker.wait(60) == 5, worker.log  # a worker process died during the burst

    assert "Worker process failed, exiting" in worker.log
    assert "Worker process died slot=0" in worker.log  # and was replaced
    breaking.refresh()
    assert breaking.return_value == "added"
    failing.refresh()  # its outcome was never written: the reaper settles it (LeaseExpired)
    assert failing.status in (TaskResultStatus.RUNNING, TaskResultStatus.READY)
    after.refresh()
    assert after.return_value == 9
