"""The children a supervisor running as PID 1 gets from the kernel, and must wait for.

In a container with no init (no ``tini``, no ``docker run --init``), the command is PID 1 of
its PID namespace, and every process whose parent exits is handed to it: a daemon a task
started with a double fork, or the subprocesses a task left unwaited in a worker process that
has since recycled. Each stays a zombie, holding its pid, until PID 1 waits for it; thousands of
tasks left thousands (docs/deploy.md, Docker image).
"""

import logging
import os
from collections.abc import Container

logger = logging.getLogger(__name__)


def is_pid_1() -> bool:
    """Whether this process is the init of its PID namespace, the one orphans are handed to."""
    return os.getpid() == 1


def reap_orphans(ours: Container[int | None]) -> None:
    """Wait for every ended child whose pid is not one of ``ours``, the worker processes.

    The supervisor waits for those itself, to read their exit codes. Each child is looked at
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
        os.waitid(os.P_PID, ended.si_pid, os.WEXITED)
        logger.debug("Orphan reaped pid=%d status=%d", ended.si_pid, ended.si_status)
