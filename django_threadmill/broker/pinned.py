"""A connection of its own for a worker thread that calls Redis at every turn.

The ack writer sends a call per result that comes alone, and the prefetcher one per refill.
Each call of the pooled client takes a connection from redis-py's pool and hands it back, and
the pool's locks, its queue of idle connections and its observability hooks cost 4 to 17 µs of
CPU a call, of a lone call's 110 to 130 (docs/worker.md, A connection of its own). A thread
that holds one connection for good, used by no other thread, needs none of that. What the pool
does for each connection it hands out is kept: a look at whether the server closed it since its
last call (a ``recv`` that finds nothing waiting), which the sync client's calls rely on, as
they are not tried again (connection.py).

Only a client of one Redis pins: a Redis Cluster client keeps a pool per node, and a
Sentinel-managed connection asks the sentinels for the primary as it connects, through its
own pool.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from .reconnects import ReconnectingPool


class OneConnectionPool(ReconnectingPool):
    """A pool of one connection, for one thread: it hands out the same connection each time,
    looked at first as the shared pool looks at each it hands out (closed by the server since
    the last call, as a server's idle ``timeout``, a restart or a request refused as too large
    closes it: opened afresh), and closed first if made before the current round of fresh
    connections (reconnects.py). Not counted in the shared pool's ``max_connections``: it adds
    one connection per pinned thread."""

    def __init__(self, shared: ReconnectingPool) -> None:
        super().__init__(
            reconnects=shared.reconnects,
            connection_class=shared.connection_class,
            max_connections=1,
            **shared.connection_kwargs,
        )
        self._connection: Any = None
        # How a connection is looked at before each call: redis-py 8's pool method; before 8 the
        # look is inside get_connection, which this pool replaces.
        self._look_at: Callable[[Any], None] = getattr(
            self, "ensure_connection", _opened_afresh_unless_ready
        )

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        connection = self._connection
        if connection is None:
            make: Callable[[], Any] = self.make_connection  # untyped in redis-py
            connection = self._connection = make()
        if self.reconnects.stale(connection):
            connection.disconnect()
        self._look_at(connection)
        return connection

    def release(self, connection: Any) -> None:
        """Keep the connection: it is handed out again at the thread's next call."""


def _opened_afresh_unless_ready(connection: Any) -> None:
    """Connect ``connection``, and open it afresh if anything waits to be read on it: a reply
    left unread, or the end of a socket the server closed. Still not ready, it raises."""
    connection.connect()
    try:
        ready = not connection.can_read()
    except (redis.ConnectionError, redis.TimeoutError, OSError):  # read the server's close
        ready = False
    if ready:
        return
    connection.disconnect()
    connection.connect()
    if connection.can_read():
        raise redis.ConnectionError("Connection not ready: data waits on a fresh connection")


class PinnedClient(redis.Redis):
    """A client of a ``OneConnectionPool``: each call is sent on its connection and its reply
    read, tried again as its connection's ``retry`` says (none, unless
    ``OPTIONS['connection_options']`` sets one), without the rest of the pooled client's
    wrapping (its lock, its per-call observability hooks): with the pool's hand-out, a fifth
    of a lone finish call's client CPU (docs/worker.md, A connection of its own). A failed
    call drops the connection as redis-py's does: its send and its read close it on any error
    but an error reply, after which the connection is as good as before."""

    def execute_command(self, *args: Any, **options: Any) -> Any:
        hand_out: Callable[[], Any] = self.connection_pool.get_connection  # untyped in redis-py
        connection = hand_out()
        return connection.retry.call_with_retry(
            lambda: self._sent(connection, args, options), lambda _: connection.disconnect()
        )

    def _sent(self, connection: Any, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
        parse: Callable[..., Any] = self.parse_response  # untyped in redis-py
        connection.send_command(*args, **options)
        return parse(connection, args[0], **options)


class Pins(threading.local):
    """The client each thread pinned for one broker, if any."""

    client: PinnedClient | None = None


@contextmanager
def pinned(pins: Pins, shared: Any) -> Iterator[None]:
    """Give the calling thread a connection of its own for the block, when ``shared`` is a
    client of one Redis; close it at the end. Elsewhere the block uses ``shared``."""
    pool = getattr(shared, "connection_pool", None)
    if not isinstance(pool, ReconnectingPool) or pins.client is not None:
        yield
        return
    client = PinnedClient(connection_pool=OneConnectionPool(pool))
    pins.client = client
    try:
        yield
    finally:
        pins.client = None
        client.connection_pool.disconnect()
