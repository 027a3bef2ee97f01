"""In a container with no init (no tini, no ``docker run --init``), the worker command is PID 1 of
its PID namespace, and the kernel hands it every orphan: a daemon a task started with a double
fork, the subprocesses a task never waited for once its process recycled. The supervisor left
each a zombie for good, one or more per task; it now waits for them, and still reads its own
processes' ends: a recycle, a SIGKILL, a SIGTERM to stop (docs/deploy.md, Docker image).

The command runs under ``unshare --pid --fork --mount-proc``, as a container runs it. The task is
at module level so worker processes import it.
"""

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_threadmill.compat import task
from tests.support import Command, wait_until

MAX_TASKS = 10  # each process recycles after this many
TASKS = 25  # 2 recycles; the last process, which the test kills, does not recycle


# A PID namespace of its own, with its own /proc; the command in it is killed with unshare.
UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]


def _pid_namespaces() -> str | None:
    """Return why a PID namespace cannot be made here, or None if it can."""
    if shutil.which("unshare") is None:
        return "no unshare (util-linux) on PATH"
    tried = subprocess.run([*UNSHARE, "true"], capture_output=True, check=False)
    if tried.returncode:
        return f"unshare cannot make a PID namespace here (root needed): {tried.stderr!r}"
    return None


NO_PID_NAMESPACE = _pid_namespaces()
pytestmark = pytest.mark.skipif(NO_PID_NAMESPACE is not None, reason=str(NO_PID_NAMESPACE))


@task
def leaves_orphans() -> None:
    """Leave a subprocess never waited for, and a daemon started with a double fork that ends
    at once."""
    subprocess.Popen(["true"])
    parent = os.fork()
    if parent == 0:
        if os.fork() == 0:  # the daemon, an orphan as soon as its parent ends
            os._exit(0)
        os._exit(0)
    os.waitpid(parent, 0)


def _children(pid: int) -> dict[int, str]:
    """Return the children of ``pid`` (this namespace's pids), each with its state letter."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[1]) == pid:
            found[int(stat.parent.name)] = fields[0]
    return found


def _pid_inside(pid: int) -> int:
    """Return the pid ``pid`` has inside its own PID namespace, as the command logs it."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.findall(r"^NSpid:.*\s(\d+)$", status, re.MULTILINE)[0])


@pytest.fixture
def at_pid_1(redis_url: str, key_prefix: str) -> Iterator[tuple[Command, int]]:
    """The worker command as PID 1 of a PID namespace, its processes recycling every
    MAX_TASKS tasks; the command, and the supervisor's pid here."""
    unshared = (
        f"import os, sys; os.execvp('unshare', [*{UNSHARE!r}, sys.executable, *sys.argv[1:]])"
    )
    command = Command(
        redis_url,
        key_prefix,
        "manage.py",
        "threadmill_worker",
        "--processes",
        "1",
        "--max-tasks",
        str(MAX_TASKS),
        code=unshared,
    )
    try:
        command.wait_for_log(r"Supervisor started pid=1 ")
        [supervisor] = _children(command.process.pid)
        yield command, supervisor
    finally:
        command.close()


def test_the_orphans_are_reaped_and_the_processes_ends_read_as_before(
    at_pid_1: tuple[Command, int],
) -> None:
    worker, supervisor = at_pid_1
    results = [leaves_orphans.enqueue() for _ in range(TASKS)]
    for result in results:
        wait_until(lambda result=result: result.refresh() or result.is_finished, "a task")
    assert {result.status.name for result in results} == {"SUCCESSFUL"}

    def zombies() -> list[int]:
        return [pid for pid, state in _children(supervisor).items() if state == "Z"]

    wait_until(lambda: not zombies(), "the orphans reaped", timeout_s=30)
    # A worker process's own end is still the supervisor's to read: not taken by the reaping.
    wait_until(lambda: len(_children(supervisor)) == 1, "the recycled processes gone")
    worker.wait_for_log(r"Worker process recycled slot=0 ")
    assert "Worker process died" not in worker.log
    [process] = _children(supervisor)
    newest = _pid_inside(process)
    assert newest == worker.child_pids()[-1]
    os.kill(process, signal.SIGKILL)
    worker.wait_for_log(rf"Worker process died slot=0 pid={newest} status=signal 9 ")
    worker.wait_for_log(rf"Worker process spawned slot=0 pid=(?!{newest}\b)\d+")

    os.kill(supervisor, signal.SIGTERM)  # as docker stop: from outside the namespace
    assert worker.wait() == 0, worker.log
    assert "Supervisor stopped exit_code=0" in worker.log
