"""The children a command running as PID 1 gets from the kernel, and must wait for.

In a container with no init (no ``tini``, no ``docker run --init``), the command is PID 1 of
its PID namespace, and every process whose parent exits is handed to it: a daemon a task
started with a double fork, the subprocesses a task left unwaited in a worker process that has
since recycled, the background job of a shell ``docker exec`` started. Each stays a zombie,
holding its pid, until PID 1 waits for it; thousands of tasks left thousands. The supervisor
and the reaper's loop wait for them where none of their own code waits for a child; the worker
run in the command's own process cannot, and says so (docs/deploy.md, Docker image).
"""

import logging
import os
from collections.abc import Container

logger = logging.getLogger(__name__)


def is_pid_1() -> bool:
    """Whether this process is the init of its PID namespace, the one orphans are handed to."""
    return os.getpid() == 1


def reap_orphans(ours: Container[int | None] = ()) -> None:
    """Wait for every ended child whose pid is not one of ``ours``, the worker processes.

    Only where no other thread waits for a child of its own: one that ended would be waited
    for here, the thread then reading no exit code (``subprocess.run`` gives returncode 0).
    The supervisor waits for ``ours`` itself, to read their exit codes. Each child is looked at
    before it is waited for (``WNOWAIT``), and the look stops at one of ours, collected on the
    supervisor's next pass (its exit woke it): the kernel shows one ended child at a time, and
    one of ours waited for here would have taken its exit code, the supervisor then seeing it
    alive for good.
    """
    while True:
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # no child at all
            return
        if ended is None or ended.si_pid in ours:
            return
        try:  # never blocks: a pid reused meanwhile by a live child is left alone
            os.waitid(os.P_PID, ended.si_pid, os.WEXITED | os.WNOHANG)
        except ChildProcessError:  # another waiter took it first (a call running at a stop)
            continue
        logger.debug("Orphan reaped pid=%d status=%d", ended.si_pid, ended.si_status)


def warn_unreaped_in_process() -> None:
    """At PID 1, warn that the worker run in this process (``--processes 0``) leaves orphans
    zombies, naming the fix.

    It cannot wait for them: its tasks' threads wait for children of this same process, and
    the kernel shows no difference between one of theirs and an orphan handed over.
    """
    if is_pid_1():
        logger.warning(
            "Orphans left unreaped pid=1 processes=0: as PID 1 with no init, this process is "
            "handed every orphan a task leaves (a daemon it started, a subprocess it never "
            "waited for), and each stays a zombie holding a pid until the command exits. It "
            "cannot wait for them while tasks run beside it: it would take the exit codes of "
            "the subprocesses they wait for. Use --processes 1 or more, whose supervisor waits "
            "for them, or start the command under an init (docker run --init, tini)."
        )
