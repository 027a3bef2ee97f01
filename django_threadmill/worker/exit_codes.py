"""How a worker process, and the whole ``threadmill_worker`` command, end."""

import logging
import os
import sys
from contextlib import suppress
from enum import IntEnum
from typing import NoReturn


class ExitCode(IntEnum):
    """Exit codes: a worker process's tell its supervisor what to do; the command's, the caller.

    Each value means one thing wherever the worker sets it. A command that cannot start exits 1
    too (Django's CommandError, a traceback) or 2 (argparse's usage error): docs/worker.md, Exit
    codes.
    """

    OK = 0
    FORCED = 1  # a second signal, or threads still running after the grace period
    GAVE_UP = 2  # the command: worker processes kept dying right after start
    RECYCLE = 3  # a process reached --max-tasks or --max-memory: its replacement runs already
    # (the process said RECYCLING as it began: docs/worker.md, Recycling)
    REFUSED = 4  # Redis refused the credentials or ACL rights, the TLS set-up is wrong, or
    # LOCATION names a server of another kind (broker/wrong_server.py): restarting cannot help
    CRASHED = 5  # a process: a thread's own loop failed, or its main thread raised (in its
    # stop, say); the supervisor restarts it with backoff. The command: a worker process died
    # during a --burst, or during a stop (crashed in its own, or killed by another than the
    # supervisor).
    DROPPED = 6  # stopped, but Redis did not take its last writes in time: outcomes not written
    # or tasks not handed back (those an acquire it had not answered may have reserved too) are
    # left to lease expiry and the reaper. Not a crash: the supervisor replaces such a process
    # at once.


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` without waiting for its threads (a task given up on, a
    call to a silent Redis), once what it logged and printed is written.

    ``os._exit`` writes no buffer: a task's ``print`` lines, held in ``sys.stdout``'s buffer
    wherever it is no terminal (a pipe to Docker's or systemd's log, a file), were lost with
    every worker process that ended (docs/worker.md, Shutdown).
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):  # None, closed or replaced by a task: nothing to write then
            stream.flush()
    os._exit(code)
