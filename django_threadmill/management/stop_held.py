"""SIGINT and SIGTERM held off while an operator's change to Redis is on its way.

A Ctrl-C or SIGTERM that came while ``threadmill_queue`` waited for a write's reply ended the
command there, with a traceback or without a word: Redis made the change all the same, and
``forget-damaged --all`` had dropped a batch it never listed. Held, the signal ends the command
once what it did is said; a second one interrupts it at once, for a Redis that never answers or
an output that takes nothing (docs/lifecycle.md, Damaged records).
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ..worker.interruptible import STOP_SIGNALS


class Stopped(Exception):
    """A held stop signal, raised where the command can end with what it did said."""

    def __init__(self, signum: int) -> None:
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


class HeldStop:
    """The first stop signal heard while held, if any; a second one interrupts at once."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def heard(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt  # the second: stop now, whatever is on its way
        self.signum = signum

    def check(self) -> None:
        """Raise Stopped if a stop signal came: call it where what was done so far is said."""
        if self.signum is not None:
            raise Stopped(self.signum)


@contextmanager
def stops_held() -> Iterator[HeldStop]:
    """Hold SIGTERM and SIGINT for the block, then put back what was there.

    Only the main thread hears signals (``call_command`` from another holds nothing), and a
    signal ignored stays ignored, as SIGINT is in a shell's background job.
    """
    stop = HeldStop()
    main = threading.current_thread() is threading.main_thread()
    held = [s for s in STOP_SIGNALS if main and signal.getsignal(s) is not signal.SIG_IGN]
    previous = {signum: signal.signal(signum, stop.heard) for signum in held}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
