"""A connection of its own for a worker thread that calls Redis at every turn.

The ack writer sends a call per result that comes alone, and the prefetcher one per refill.
Each call of the pooled client takes a connection from redis-py's pool and hands it back: its
locks, its checks that the connection is still open with no reply left unread (a ``poll`` and
two ``ioctl`` calls) and its observability hooks cost 11 to 20 µs of CPU a call, about a
sixth of a lone call's client CPU (docs/worker.md, A connection of its own). A thread that holds one
connection for good, and is the only one to use it, needs none of that: the connection cannot
have been left with an unread reply by another thread, and redis-py closes it on any error of
a call, so the next call connects afresh.

Only a client of one Redis pins: a Redis Cluster client keeps a pool per node, and a
Sentinel-managed connection asks the sentinels for the primary as it connects, through its
own pool.
"""

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from .reconnects import ReconnectingPool

# A connection unused this long is looked at before it is handed out, as the shared pool looks
# at each: a server's idle ``timeout`` or a restart closes connections that sit unused, and a
# call on one would fail first, then be tried again on a fresh one.
IDLE_CHECK_S = 1.0


class OneConnectionPool(ReconnectingPool):
    """A pool of one connection, for one thread: it hands out the same connection each time,
    connected by its call as redis-py connects a closed one, and closed first if made before
    the current round of fresh connections (reconnects.py). Not counted in the shared pool's
    ``max_connections``: it adds one connection per pinned thread."""

    def __init__(self, shared: ReconnectingPool, clock: Callable[[], float] = time.monotonic):
        super().__init__(
            reconnects=shared.reconnects,
            connection_class=shared.connection_class,
            max_connections=1,
            **shared.connection_kwargs,
        )
        self.clock = clock
        self._connection: Any = None
        self._handed_out_at = -math.inf

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        connection = self._connection
        if connection is None:
            make: Callable[[], Any] = self.make_connection  # untyped in redis-py
            connection = self._connection = make()
        if self.reconnects.stale(connection):
            connection.disconnect()
        now = self.clock()
        if now - self._handed_out_at > IDLE_CHECK_S:
            self.ensure_connection(connection)  # closed by the server meanwhile: open afresh
        self._handed_out_at = now
        return connection

    def release(self, connection: Any) -> None:
        """Keep the connection: it is handed out again at the thread's next call."""


class Pins(threading.local):
    """The client each thread pinned for one broker, if any."""

    client: redis.Redis | None = None


@contextmanager
def pinned(pins: Pins, shared: Any) -> Iterator[None]:
    """Give the calling thread a connection of its own for the block, when ``shared`` is a
    client of one Redis; close it at the end. Elsewhere the block uses ``shared``."""
    pool = getattr(shared, "connection_pool", None)
    if not isinstance(pool, ReconnectingPool) or pins.client is not None:
        yield
        return
    pins.client = redis.Redis.from_pool(OneConnectionPool(pool))
    try:
        yield
    finally:
        client, pins.client = pins.client, None
        client.close()
