"""The pipe a worker's or supervisor's main thread sleeps on, and signals wake.

The kernel may hand a signal sent to a process to any of its threads that does not block it.
Python runs its handler in the main thread only, and a main thread asleep in ``select`` with
no timeout is not woken when another thread took the signal: the handler waits until
something else wakes it, which for an idle worker is never. Registered with
``signal.set_wakeup_fd``, the pipe gets a byte whichever thread the signal reached, and the
main thread wakes to run the handler (docs/worker.md, Signals reach the main thread).
"""

import os
import selectors
import signal
import time
from collections.abc import Callable
from contextlib import suppress


class WakeupPipe:
    """A pipe to sleep on: signals write to it once installed, and so does ``poke``."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)  # drain() reads what is there, never waits
        os.set_blocking(self._write_fd, False)  # set_wakeup_fd asks for it; a full pipe wakes
        self._previous: int | None = None  # the wakeup fd before install(), put back at close
        self.closed = False

    def install(self) -> None:
        """Make every signal write to the pipe (the main thread only, as ``signal.signal``)."""
        self._previous = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)

    def poke(self) -> None:
        """Wake the sleeper, from any thread; nothing once closed (no one sleeps on it)."""
        if self.closed:
            return
        with suppress(BlockingIOError):  # full: the sleeper is woken already
            os.write(self._write_fd, b"\0")

    def drain(self) -> None:
        """Empty the pipe once awake, so the next sleep blocks."""
        with suppress(BlockingIOError):
            os.read(self.read_fd, 4096)

    def sleep_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> None:
        """Block until ``done()`` holds, looked at each time a signal or a poke wakes the pipe,
        or ``timeout_s`` has passed (None: no limit).

        A selector, not ``select.select``, which refuses a descriptor numbered past 1023 (a
        process that runs the worker in itself may hold that many before it makes the pipe).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.read_fd, selectors.EVENT_READ)
            while not done():
                left_s = None if deadline is None else deadline - time.monotonic()
                if left_s is not None and left_s <= 0:
                    return
                selector.select(left_s)
                self.drain()

    def uninstall(self) -> None:
        """Put the earlier wakeup fd back, if installed."""
        if self._previous is not None:
            signal.set_wakeup_fd(self._previous)
            self._previous = None

    def close(self) -> None:
        """Put the earlier wakeup fd back (if installed) and close both ends."""
        self.closed = True
        self.uninstall()
        os.close(self.read_fd)
        os.close(self._write_fd)
