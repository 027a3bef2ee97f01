"""Calls to Redis that the main thread makes and a stop signal must not wait for.

A Redis that takes connections and never answers (paused, a frozen host, a proxy whose far
side is gone) holds a call for ``socket_timeout``. The worker's start-up made such calls on
its main thread: the system checks, the supervisor's first reap pass and schedules, a worker
process's first look at Redis; the supervisor's later passes too. A SIGTERM or SIGINT then
waited for the call, 60 s with ``socket_timeout`` 60, while systemd or Kubernetes counted
down to SIGKILL. Made in a thread of its own, the call is waited for on the main thread's
wake-up pipe, which a signal wakes: a stop leaves the call behind, and the process exits
without it (docs/worker.md, Stopping during start-up).
"""

import contextvars
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from .wakeup import WakeupPipe

# SIGHUP too: a terminal's hangup (an ssh session dropped, its window closed) reaches the whole
# process group, and its default action ended every running task at once, as a SIGKILL would.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
# Block until the predicate holds, or the timeout (seconds; None for none) has passed.
type Sleep = Callable[[Callable[[], bool], float | None], None]
# What a reap pass (or the schedules) gets to end after a stop: enough for one Redis answers.
PASS_GRACE_S = 1.0


class Interrupted(Exception):
    """A stop came while the main thread waited for a call; the call runs on, left behind."""


class WaitedCall[T](threading.Thread):
    """Make one call in a thread named ``threadmill-wait-<role>``, in the caller's context
    (its context variables), keep what it returned or raised, then ``wake`` the waiter."""

    def __init__(self, role: str, call: Callable[[], T], wake: Callable[[], None]) -> None:
        super().__init__(name=f"threadmill-wait-{role}")
        self._call = call
        self._wake = wake
        self._context = contextvars.copy_context()
        self._returned: T | None = None
        self._raised: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self._returned = self._context.run(self._call)
        except BaseException as exc:  # handed to the waiter, who raises it
            self._raised = exc
        finally:
            self.done.set()
            self._wake()

    def outcome(self) -> T:
        """Return what the call returned, or raise what it raised."""
        if self._raised is not None:
            raise self._raised
        return self._returned  # type: ignore[return-value]


def call_unless_stopped[T](
    role: str,
    call: Callable[[], T],
    sleep: Sleep,
    wake: Callable[[], None],
    stopped: Callable[[], bool],
    *,
    grace_s: float = 0.0,
    forced: Callable[[], bool] = lambda: False,
) -> T:
    """Make ``call`` in a thread of its own while this thread sleeps (``sleep``, woken by
    ``wake`` and by signals); return what it returned or raise what it raised. Raise
    ``Interrupted`` once ``stopped()`` holds first and the call did not end within ``grace_s``
    more, or ``forced()`` held first (a second signal): the call is left behind. A grace lets
    a call Redis answers end (a reap pass's last settlements get their log lines and
    signals); a silent Redis holds it past the grace. The grace is slept on ``sleep`` too, not
    on the call's event, so a second signal wakes the sleeper, who acts on it at once."""
    waited = WaitedCall(role, call, wake)
    try:
        waited.start()
    except RuntimeError:  # "can't start new thread": the call is made here, as it was before
        return call()
    sleep(lambda: waited.done.is_set() or stopped(), None)
    if grace_s and not waited.done.is_set():
        sleep(lambda: waited.done.is_set() or forced(), grace_s)
    if not waited.done.is_set():
        raise Interrupted(role)
    waited.join()  # it is ending: none is left to outlive the caller's look at its threads
    return waited.outcome()


def stop_signals() -> list[int]:
    """Return the stop signals to handle: all of them, but SIGHUP stays ignored where it was
    (started under ``nohup``, which asks that a hangup not stop it)."""
    return [
        signum
        for signum in STOP_SIGNALS
        if signum != signal.SIGHUP or signal.getsignal(signum) is not signal.SIG_IGN
    ]


@contextmanager
def stop_signals_heard(
    wakeup: WakeupPipe, handler: Callable[[int, FrameType | None], None]
) -> Iterator[None]:
    """Hand SIGTERM, SIGINT and SIGHUP to ``handler`` for the block, each waking the main
    thread through ``wakeup`` whichever thread the kernel gave it to; put back what was there."""
    wakeup.install()  # before the handlers: every signal they hear writes to the pipe
    handlers = {signum: signal.signal(signum, handler) for signum in stop_signals()}
    try:
        yield
    finally:
        for signum, previous in handlers.items():
            signal.signal(signum, previous)
        wakeup.uninstall()
