"""In a container with no init (no tini, no ``docker run --init``), the worker command is PID 1 of
its PID namespace, and the kernel hands it every orphan: a daemon a task started with a double
fork, the subprocesses a task never waited for once its process recycled. The supervisor left
each a zombie for good, one or more per task; it now waits for them, and still reads its own
processes' ends: a recycle, a SIGKILL, a SIGTERM to stop (docs/deploy.md, Docker image).

The command runs under ``unshare --pid --fork --mount-proc``, as a container runs it.
"""

import os
import signal
from collections.abc import Iterator

import pytest

from tests.support import Command, wait_until
from tests.worker.pid_namespace import (
    at_pid_1,
    children,
    leaves_orphans,
    needs_pid_namespaces,
    pid_1,
    pid_inside,
    zombies,
)

MAX_TASKS = 10  # each process recycles after this many
TASKS = 25  # 2 recycles; the last process, which the test kills, does not recycle

pytestmark = needs_pid_namespaces


@pytest.fixture
def supervised(redis_url: str, key_prefix: str) -> Iterator[tuple[Command, int]]:
    """The worker command as PID 1 of a PID namespace, its processes recycling every
    MAX_TASKS tasks; the command, and the supervisor's pid here."""
    command = at_pid_1(
        redis_url,
        key_prefix,
        "threadmill_worker",
        "--processes",
        "1",
        "--max-tasks",
        str(MAX_TASKS),
    )
    try:
        command.wait_for_log(r"Supervisor started pid=1 ")
        yield command, pid_1(command)
    finally:
        command.close()


def test_the_orphans_are_reaped_and_the_processes_ends_read_as_before(
    supervised: tuple[Command, int],
) -> None:
    worker, supervisor = supervised
    results = [leaves_orphans.enqueue() for _ in range(TASKS)]
    for result in results:
        wait_until(lambda result=result: result.refresh() or result.is_finished, "a task")
    assert {result.status.name for result in results} == {"SUCCESSFUL"}

    wait_until(lambda: not zombies(supervisor), "the orphans reaped", timeout_s=30)
    # A worker process's own end is still the supervisor's to read: not taken by the reaping.
    wait_until(lambda: len(children(supervisor)) == 1, "the recycled processes gone")
    worker.wait_for_log(r"Worker process recycled slot=0 ")
    assert "Worker process died" not in worker.log
    [process] = children(supervisor)
    newest = pid_inside(process)
    assert newest == worker.child_pids()[-1]
    os.kill(process, signal.SIGKILL)
    worker.wait_for_log(rf"Worker process died slot=0 pid={newest} status=signal 9 ")
    worker.wait_for_log(rf"Worker process spawned slot=0 pid=(?!{newest}\b)\d+")

    os.kill(supervisor, signal.SIGTERM)  # as docker stop: from outside the namespace
    assert worker.wait() == 0, worker.log
    assert "Supervisor stopped exit_code=0" in worker.log
