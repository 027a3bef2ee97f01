"""A child a task forks and leaves running holds copies of its worker process's descriptors,
the sentinel pipe and control socket the supervisor waited on to hear the process exit. The
supervisor now hears the exit itself (SIGCHLD): a killed process is replaced, and a stop ends,
while the child lives on (docs/worker.md, How the loop works).

The worker runs as the real ``threadmill_worker`` command in a subprocess: the behaviour is the
supervisor's. The task is at module level so worker processes import it.
"""

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from django_threadmill.compat import task
from tests.support import Command, release_fifo, wait_until
from tests.worker import tasks


def _wait_for_release(fifo: str) -> None:
    """Block until the test opens ``fifo`` for writing and closes it."""
    with open(fifo) as released:
        released.read()


def _fork(fifo: str) -> int:
    child = os.fork()
    if child == 0:
        try:
            _wait_for_release(fifo)
        finally:
            os._exit(0)
    return child


def _multiprocessing_fork(fifo: str) -> int:
    child = multiprocessing.get_context("fork").Process(target=_wait_for_release, args=(fifo,))
    child.start()
    assert child.pid is not None
    return child.pid


STARTS = {"os.fork": _fork, "multiprocessing": _multiprocessing_fork}


@task
def leaves_a_child(fifo: str, how: str) -> int:
    """Start a child that outlives the task (``how``: a key of STARTS); return its pid."""
    return STARTS[how](fifo)


@pytest.fixture(params=sorted(STARTS))
def forked_child(
    request: pytest.FixtureRequest, start_worker: Callable[..., Command], tmp_path: Path
) -> Iterator[tuple[Command, Path]]:
    """A worker (--reap-interval 0: no timer wakes the supervisor) whose one process has run
    a task that left a child waiting on a FIFO; the worker, and the FIFO that lets it go."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    worker = start_worker("--reap-interval", "0")
    forking = leaves_a_child.enqueue(str(fifo), request.param)
    wait_until(lambda: forking.refresh() or forking.is_finished, "the forking task")
    try:
        yield worker, fifo
    finally:
        with suppress(ProcessLookupError):
            os.kill(forking.return_value, signal.SIGKILL)


def test_a_killed_process_is_replaced_while_a_child_its_task_forked_lives(
    forked_child: tuple[Command, Path],
) -> None:
    """The supervisor slept until the child ended (with --reap-interval 0, for good), or until
    its next reap pass: no process served the queues meanwhile."""
    worker, fifo = forked_child
    [original] = worker.child_pids()

    os.kill(original, signal.SIGKILL)
    worker.wait_for_log(rf"Worker process died slot=0 pid={original} status=signal 9")
    after = tasks.pid.enqueue()
    wait_until(lambda: after.refresh() or after.is_finished, "a task on the new process")
    assert after.return_value == worker.child_pids()[1] != original

    wait_until(lambda: release_fifo(fifo), "the child still waiting to be let go")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_stop_ends_while_a_child_a_task_forked_lives(
    forked_child: tuple[Command, Path],
) -> None:
    """Its process stopped, but the supervisor, waiting for it to exit, never heard it: the
    command ran on until the child ended, for good if it never did."""
    worker, fifo = forked_child

    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    wait_until(lambda: release_fifo(fifo), "the child still waiting to be let go")
