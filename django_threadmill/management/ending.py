"""How the worker and reaper commands end their process: without waiting for a thread that
still waits on Redis, or runs a task the worker gave up on."""

import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from ..worker.exit_codes import exit_now

# How long the exit waits for the threads left once Python's own exit has told them to end (an
# idle thread pool's end at once): one still running then is left behind.
LEFT_THREADS_BOUND_S = 2.0


def run_then_exit(run: Callable[[], None]) -> NoReturn:
    """Run a command as ``manage.py`` does (``run``: its ``run_from_argv``), then end the
    process with its exit code, as Python ends it, except that a thread left behind that still
    runs holds the exit ``LEFT_THREADS_BOUND_S`` at most: a task given up on (past the grace
    period or ``--task-timeout``, with ``--processes 0``), or a call to a Redis that did not
    answer before a stop (docs/worker.md, Stopping during start-up). Python would wait for
    that thread for as long as it runs."""
    try:
        run()
        code = 0
    except SystemExit as stopped:  # a CommandError's returncode, or argparse's usage
        code = stopped.code if isinstance(stopped.code, int) else int(stopped.code is not None)
    if _threads_left():
        _end_within(LEFT_THREADS_BOUND_S, code)
    sys.exit(code)


def _end_within(seconds: float, code: int) -> None:
    """End the process with ``code`` ``seconds`` from now unless its exit ended it first.

    The exit goes on as Python's (its exit handlers run: coverage's data file, a tracer's last
    spans), which waits for the threads left: an idle pool's (``sync_to_async`` in an async
    task) end as soon as it tells them to. Ended at once with ``os._exit`` instead, every such
    run lost them (docs/worker.md, In one process)."""
    timer = threading.Timer(seconds, exit_now, args=(code,))
    timer.daemon = True  # not one more thread the exit waits for
    timer.start()


def _threads_left() -> bool:
    """Whether a thread Python would wait for at exit runs besides this one."""
    here = threading.current_thread()
    return any(not thread.daemon and thread is not here for thread in threading.enumerate())
