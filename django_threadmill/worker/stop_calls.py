"""Redis calls only a stopping process makes, each in a thread of its own, and timed joins.

A Redis that stops answering (paused, or a network that drops its packets) holds a call for
``socket_timeout``, or for good with ``socket_timeout`` None. Made from the main thread, the
prefetcher's wake token and the release of unstarted tasks held the whole stop that long. In a
thread of its own, such a call is waited for until the stop's deadline at most; past it the
process exits without it, and lease expiry and the reaper do what it would have done
(docs/worker.md, Shutdown).
"""

import threading
import time
from collections.abc import Callable

from .role import RoleThread


class StopCall[T](RoleThread):
    """Make one call in a thread named ``threadmill-stop-<role>``; keep what it returned."""

    def __init__(self, role: str, call: Callable[[], T], on_crash: Callable[[], None]) -> None:
        super().__init__(f"threadmill-stop-{role}", on_crash)
        self.call = call
        self.result: T | None = None  # what the call returned, once it has

    def loop(self) -> None:
        self.result = self.call()


def start_call[T](role: str, call: Callable[[], T], on_crash: Callable[[], None]) -> StopCall[T]:
    """Start ``call`` in a thread of its own; make it here if the system refuses a thread."""
    stop_call = StopCall(role, call, on_crash)
    try:
        stop_call.start()
    except RuntimeError:  # "can't start new thread": the call still has to be made
        stop_call.loop()
    return stop_call


def join_until(thread: threading.Thread, deadline: float | None) -> None:
    """Join ``thread`` until ``deadline`` (monotonic; None: until it ends) at the latest, if
    it started: after a start the system refused, the rest never did."""
    if thread.ident is not None:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
