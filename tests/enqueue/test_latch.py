"""A thread waiting for its batch finishes its hand-off before an interrupt."""

import inspect
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from django_threadmill.enqueue.batching import Latch
from tests.support import wait_until


class Interrupted(Exception):
    """Raised by the test's signal handler, as KeyboardInterrupt is by Python's."""


def acquire_line() -> int:
    """Return the line of Latch.wait that blocks, so the test signals a thread blocked there."""
    lines, first = inspect.getsourcelines(Latch.wait)
    return first + next(n for n, line in enumerate(lines) if "_lock.acquire()" in line)


@pytest.fixture
def handled() -> Iterator[threading.Event]:
    """Install a SIGUSR1 handler that raises Interrupted in the main thread."""
    seen = threading.Event()

    def handler(signum: int, frame: object) -> None:
        seen.set()
        raise Interrupted

    previous = signal.signal(signal.SIGUSR1, handler)
    yield seen
    signal.signal(signal.SIGUSR1, previous)


def test_an_interrupted_wait_returns_the_interrupt_once_opened(handled: threading.Event) -> None:
    latch = Latch()
    main = threading.main_thread()
    assert threading.current_thread() is main  # signals reach the main thread only

    def interrupt_then_open() -> None:
        blocked = acquire_line()
        wait_until(
            lambda: sys._current_frames()[main.ident].f_lineno == blocked,  # type: ignore[index]
            "the main thread blocked in Latch.wait",
        )
        signal.pthread_kill(main.ident, signal.SIGUSR1)  # type: ignore[arg-type]
        handled.wait()
        latch.open()

    opener = threading.Thread(target=interrupt_then_open, name="test-latch-opener")
    opener.start()
    interrupted = latch.wait()  # blocks again after the interrupt, until opened
    opener.join()
    assert isinstance(interrupted, Interrupted)


def test_an_opened_latch_does_not_block() -> None:
    latch = Latch()
    latch.open()
    assert latch.wait() is None
