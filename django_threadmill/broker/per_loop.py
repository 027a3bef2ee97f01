"""What is kept per event loop (an asyncio client, a coalescer), let go when its loop ends.

Each value holds its loop (a client's connections, a coalescer's flusher task), so a
``WeakKeyDictionary`` keyed by loop never dropped one: every loop that ever called ``aenqueue``
kept its Redis connections open for the life of the process, and ``async_to_sync`` makes a new
loop per call in a sync view. Now a value is closed as its loop shuts down (``asyncio.run`` and
``async_to_sync`` close a loop's async generators first, and one is kept per value for that),
and values of closed loops are dropped when a loop first asks, so there are as many as loops
alive.
"""

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import suppress

from ..forks import ForkSafeLock


class PerLoop[T]:
    """One value per running event loop, made by ``make`` on the loop's first ``get`` and
    handed to ``close`` (on the loop) when the loop shuts down."""

    def __init__(
        self, make: Callable[[], T], close: Callable[[T], Awaitable[None]] | None = None
    ) -> None:
        self._make = make
        self._close = close
        # loop -> its value, and the async generator that closes it with the loop
        self._values: dict[asyncio.AbstractEventLoop, tuple[T, AsyncGenerator[None]]] = {}
        # Loops of other threads add and drop values too. Fresh in a forked child, where the
        # parent's values stay: their loops never run there, and closing their connections
        # from the child would unregister them from the epoll it shares with the parent.
        self._lock = ForkSafeLock()

    def get(self) -> T:
        """Return the running loop's value, made now if this loop has none."""
        loop = asyncio.get_running_loop()
        entry = self._values.get(loop)
        if entry is None:
            with self._lock:
                for closed in [other for other in self._values if other.is_closed()]:
                    del self._values[closed]
                value = self._make()
                entry = self._values[loop] = (value, self._closing(value))
            # Run it to its yield now (it awaits nothing before): the loop closes only
            # generators that started, and hears of one when it is first sent a value.
            with suppress(StopIteration):
                entry[1].asend(None).send(None)
        return entry[0]

    async def _closing(self, value: T) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            if self._close is not None:
                await self._close(value)

    def __len__(self) -> int:
        return len(self._values)
