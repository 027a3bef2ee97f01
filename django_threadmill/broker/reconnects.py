"""Open a backend's connections afresh once the server at LOCATION was found demoted.

A managed Redis (ElastiCache, Azure) fails over by pointing LOCATION's DNS name at the promoted
replica. Connections made before stay with the old primary, now a replica, which refuses every
write (READONLY) without closing them: pooled, they kept a worker and every enqueue failing
until the processes restarted. Once a call meets READONLY (or the UNBLOCKED that ends a blocked
wait as the server becomes a replica), each connection made before is closed before its next
call, which then connects afresh and reaches the address's new server
(docs/scaling.md, What happens on a failover). A LOCATION that names a replica for good connects
afresh at most every ``RECONNECT_EVERY_S``, not at each call.

Only one Redis's pools do this. redis-py's Sentinel client closes a connection that met
READONLY and asks the sentinels again; a Redis Cluster replica answers MOVED, which redis-py's
cluster client follows.
"""

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis
import redis.asyncio

RECONNECT_EVERY_S = 1.0  # the least time between two rounds of fresh connections
MARK = "_threadmill_round"  # the round a connection was last handed out in


class Reconnects:
    """Rounds of fresh connections for one backend's pools, sync and asyncio alike: a
    connection handed out in an earlier round than the current one is closed first."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.round = 0
        self.clock = clock
        self._started = -math.inf  # when the current round started, on ``clock``

    def demoted(self) -> None:
        """Start a new round, unless one started within RECONNECT_EVERY_S: a call met the
        server at LOCATION as a replica. Unlocked: two threads that start one each at once
        only have the connections made before connect again, once."""
        now = self.clock()
        if now - self._started < RECONNECT_EVERY_S:
            return
        self._started = now
        self.round += 1

    def start_round(self) -> None:
        """Start a new round at once, unthrottled (``ClusterNodePool.disconnect``)."""
        self.round += 1

    def stale(self, connection: object) -> bool:
        """Tell whether ``connection``, being handed out, was made before the current round
        began (one handed out for the first time was made just now); mark it current."""
        current = self.round
        last = getattr(connection, MARK, None)
        if last == current:  # the usual hand-out: nothing to write
            return False
        setattr(connection, MARK, current)
        return last is not None


class ReconnectingPool(redis.BlockingConnectionPool):
    """One Redis's blocking pool, closing a connection of an earlier round as it hands it
    out: its call connects again (redis-py connects a closed connection as it sends)."""

    def __init__(self, *, reconnects: Reconnects, **options: Any) -> None:
        start: Callable[..., None] = super().__init__  # untyped in redis-py
        start(**options)
        self.reconnects = reconnects

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        hand_out: Callable[..., Any] = super().get_connection  # untyped in redis-py
        connection = hand_out(*args, **kwargs)
        if self.reconnects.stale(connection):
            connection.disconnect()
        return connection


class ClusterNodePool(ReconnectingPool):
    """A Redis Cluster node's blocking pool, whose ``disconnect`` closes the idle connections at
    once and those in use as they are next handed out: never one a call is still reading from.

    redis-py before 7.2 disconnects the whole pool of the node it reads the slot map from, in
    use connections included, at each read (``NodesManager.initialize``, run after every
    connection error, so at each call to a primary down). A call in flight on that node from
    another thread then broke with a bare OSError or ValueError ("I/O operation on closed
    file"), which killed the worker thread that made it. redis-py 7.2 and later close only the
    idle connections there and mark the others to reconnect; this pool does alike on every
    version.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(reconnects=Reconnects(), **options)

    def disconnect(self, inuse_connections: bool = True) -> None:
        """Close the idle connections now (the client's ``close`` comes here too), and have
        those in use closed at their next hand-out. The queue's lock keeps an idle one from
        being handed out while it is closed."""
        self.reconnects.start_round()
        with self.pool.mutex:
            for connection in self.pool.queue:
                if connection is not None:  # a free slot, with no connection made for it
                    connection.disconnect()


class AsyncReconnectingPool(redis.asyncio.BlockingConnectionPool):
    """Asyncio twin of ``ReconnectingPool``."""

    def __init__(self, *, reconnects: Reconnects, **options: Any) -> None:
        super().__init__(**options)
        self.reconnects = reconnects

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        hand_out: Callable[..., Awaitable[Any]] = super().get_connection  # untyped in redis-py
        connection = await hand_out(*args, **kwargs)
        if self.reconnects.stale(connection):
            try:
                await connection.disconnect(nowait=True)  # from a replica: no need to wait
            except BaseException:  # cancelled
                await self.release(connection)  # handed back, or the pool loses it
                raise
        return connection
