"""How the worker and reaper commands end their process: without waiting for a thread that
still waits on Redis, or runs a task the worker gave up on."""

import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from ..worker.exit_codes import exit_now


def run_then_exit(run: Callable[[], None]) -> NoReturn:
    """Run a command as ``manage.py`` does (``run``: its ``run_from_argv``), then end the
    process with its exit code, even where a thread left behind still runs: a task given up on
    (past the grace period or ``--task-timeout``, with ``--processes 0``), or a call to a
    Redis that did not answer before a stop (docs/worker.md, Stopping during start-up).
    Python would wait for that thread before exiting, for as long as it runs."""
    try:
        run()
        code = 0
    except SystemExit as stopped:  # a CommandError's returncode, or argparse's usage
        code = stopped.code if isinstance(stopped.code, int) else int(stopped.code is not None)
    if _threads_left():
        exit_now(code)
    sys.exit(code)


def _threads_left() -> bool:
    """Whether a thread Python would wait for at exit runs besides this one."""
    here = threading.current_thread()
    return any(not thread.daemon and thread is not here for thread in threading.enumerate())
