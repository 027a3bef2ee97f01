"""A command run as PID 1 of a PID namespace of its own, as a container with no init runs it,
and the orphans the kernel hands it: for the tests of what PID 1 waits for (docs/deploy.md,
Docker image). The task is at module level so the commands import it.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from django_threadmill.compat import task
from tests.support import Command

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
needs_pid_namespaces = pytest.mark.skipif(
    NO_PID_NAMESPACE is not None, reason=str(NO_PID_NAMESPACE)
)


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


def at_pid_1(redis_url: str, key_prefix: str, *args: str) -> Command:
    """Start ``manage.py *args`` as PID 1 of a PID namespace of its own."""
    unshared = (
        f"import os, sys; os.execvp('unshare', [*{UNSHARE!r}, sys.executable, *sys.argv[1:]])"
    )
    return Command(redis_url, key_prefix, "manage.py", *args, code=unshared)


def pid_1(command: Command) -> int:
    """Return the pid here of a command ``at_pid_1`` started, PID 1 in its namespace."""
    [inside] = children(command.process.pid)  # unshare's one child
    return inside


def children(pid: int) -> dict[int, str]:
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


def zombies(pid: int) -> list[int]:
    """Return the children of ``pid`` that ended and were never waited for."""
    return [child for child, state in children(pid).items() if state == "Z"]


def pid_inside(pid: int) -> int:
    """Return the pid ``pid`` has inside its own PID namespace, as the command logs it."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.findall(r"^NSpid:.*\s(\d+)$", status, re.MULTILINE)[0])
