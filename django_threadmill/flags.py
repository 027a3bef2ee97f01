"""A ``ContextVar[bool]`` raised for the length of a block: how a sender tells the code it
calls, on this thread or task alone, what it is doing (sending signals, draining)."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


@contextmanager
def raised(flag: ContextVar[bool]) -> Iterator[None]:
    """Set ``flag`` True in the block, then reset it to what it was: reset, not set False, so
    a block nested in another keeps the outer one's, and ``sync_to_async``, which copies a
    thread's context back into its caller's, brings no True back."""
    reset = flag.set(True)
    try:
        yield
    finally:
        flag.reset(reset)
