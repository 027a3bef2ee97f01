"""Build redis-py's clients for one Redis, a Redis Cluster or Sentinel, sync and asyncio.

No routing of our own: ``RedisCluster`` maps each key to its node and follows MOVED/ASK and
failovers, ``Sentinel.master_for`` finds the current primary and reconnects after a failover.
Every client waits up to ``pool_timeout`` for a free connection where redis-py's pool for it
can: one Redis, a Sentinel-managed primary and the sync cluster's per-node pools.
"""

from typing import Any

import redis
import redis.asyncio
import redis.asyncio.connection
import redis.asyncio.sentinel
import redis.connection
import redis.exceptions
import redis.sentinel
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.connection import SSLConnection, parse_url
from redis.retry import Retry

from ..conf.settings import BackendSettings
from ..conf.topology import SentinelSettings
from .cluster_commands import reading_commands_from_any_node, script_keys_read_from_the_call
from .packing import packing_class, sync_packing
from .reconnects import AsyncReconnectingPool, ClusterNodePool, ReconnectingPool, Reconnects
from .sentinel_primary import (
    AsyncPrimaryConnection,
    AsyncPrimarySSLConnection,
    PrimaryConnection,
    PrimarySSLConnection,
)

type SyncClient = redis.Redis | redis.RedisCluster
type AsyncClient = redis.asyncio.Redis | redis.asyncio.RedisCluster

POOL_TIMEOUT = "timeout"  # the option only a BlockingConnectionPool takes
# What parse_url reads from LOCATION that Sentinel gives for the primary instead.
SENTINEL_GIVES = frozenset({"host", "port", "path", "connection_class"})


class BlockingSentinelConnectionPool(
    redis.sentinel.SentinelConnectionPool, redis.BlockingConnectionPool
):
    """redis-py's Sentinel pool, waiting up to ``timeout`` for a free connection as one
    Redis's pool does; redis-py's own raised "Too many connections" at once, which read as a
    call that may have been applied."""

    def disconnect(self, inuse_connections: bool = True) -> None:
        """Disconnect every connection, or only the idle ones (what Sentinel asks for when the
        primary changed): redis-py's sync blocking pool takes no argument before redis-py 7."""
        if inuse_connections:
            super().disconnect()
            return
        for connection in [found for found in self.pool.queue if found is not None]:
            connection.disconnect()


class AsyncBlockingSentinelConnectionPool(
    redis.asyncio.sentinel.SentinelConnectionPool, redis.asyncio.BlockingConnectionPool
):
    """Asyncio twin of ``BlockingSentinelConnectionPool``."""


def _no_sentinel(
    host: str, port: int, exc: redis.exceptions.InvalidResponse
) -> redis.ConnectionError:
    """Return the error redis-py's Sentinel passes over, for a reply in another protocol."""
    return redis.ConnectionError(
        f"{host}:{port} answered with something that is not the Redis protocol ({exc})"
    )


class SentinelConnection(redis.connection.Connection):
    """A connection to a sentinel on which a reply in another protocol is a ConnectionError.

    redis-py's Sentinel asks the next sentinel after a ConnectionError, but its parse error
    ended the lookup at the address where something else answered (an HTTP server, a port
    taken over): listed first, it stopped every call while the other sentinels were healthy.
    """

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except redis.exceptions.InvalidResponse as exc:
            raise _no_sentinel(self.host, self.port, exc) from exc


class SentinelSSLConnection(SentinelConnection, redis.connection.SSLConnection):
    """A TLS connection to a sentinel, on which a reply in another protocol is a
    ConnectionError, as on ``SentinelConnection``."""


class AsyncSentinelConnection(redis.asyncio.connection.Connection):
    """Asyncio twin of ``SentinelConnection``."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except redis.exceptions.InvalidResponse as exc:
            raise _no_sentinel(self.host, self.port, exc) from exc


class AsyncSentinelSSLConnection(AsyncSentinelConnection, redis.asyncio.connection.SSLConnection):
    """Asyncio twin of ``SentinelSSLConnection``."""


def over_tls(
    pool: redis.ConnectionPool | redis.asyncio.ConnectionPool,
    tls: dict[str, Any] | None,
    tls_class: type,
) -> None:
    """Make ``pool``'s new connections TLS ones of ``tls_class`` with the arguments ``tls``
    (``SentinelSettings.tls``); None leaves them plain. Set on the pool, not passed to redis-py's
    client: its keyword arguments for TLS differ between versions, sync and asyncio, where the
    connection classes take what ``connection_options`` was checked against."""
    if tls is None:
        return
    pool.connection_class = tls_class
    pool.connection_kwargs.update(tls)


def _reaching_sentinels(
    manager: redis.sentinel.Sentinel | redis.asyncio.sentinel.Sentinel,
    tls: dict[str, Any] | None,
    classes: tuple[type, type],
) -> None:
    """Make ``manager`` reach its sentinels through ``classes`` (plain, TLS), over TLS with the
    arguments ``tls`` unless None: redis-py's Sentinel takes no connection class for them."""
    plain, tls_class = classes
    for client in manager.sentinels:
        client.connection_pool.connection_class = plain
        over_tls(client.connection_pool, tls, tls_class)


def _without_pool_timeout(options: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if key != POOL_TIMEOUT}


def _primary_options(
    location: str, options: dict[str, Any], classes: tuple[type, type]
) -> dict[str, Any]:
    """Return what LOCATION says of the primary (credentials, db, its query arguments) but its
    address, which Sentinel gives, and ``options``, with the connection class of ``classes``
    (plain, TLS) LOCATION's scheme or ``options`` ask for."""
    parsed = parse_url(location)
    found = {key: value for key, value in parsed.items() if key not in SENTINEL_GIVES}
    merged = {**found, **options}
    asked = merged.pop("ssl", False)  # else redis-py's Sentinel pool would pick the class
    plain, tls_class = classes
    tls = asked or parsed.get("connection_class") is SSLConnection
    return {**merged, "connection_class": tls_class if tls else plain}


def _sentinel_options(
    sentinel: SentinelSettings, options: dict[str, Any], retry: Retry | AsyncRetry
) -> dict[str, Any]:
    """Return the options for the connections to the sentinels themselves.

    ``retry`` must retry nothing: redis-py's Sentinel asks the next sentinel itself, and
    redis-py's default retry (up to ten more tries in redis-py 8) asks a dead or hung one
    again first, each try up to the socket timeout, while the healthy sentinels wait.
    """
    timeouts = ("socket_timeout", "socket_connect_timeout")
    found = {key: options[key] for key in timeouts if key in options}
    return {**found, "retry": retry, **sentinel.auth}


def connect(
    settings: BackendSettings, options: dict[str, Any], reconnects: Reconnects | None = None
) -> SyncClient:
    """Return a client for one Redis, a Redis Cluster or a Sentinel-managed primary. One
    Redis's pool connects again in each round of ``reconnects`` (its own if None)."""
    if settings.cluster:
        return script_keys_read_from_the_call(
            redis.RedisCluster.from_url(
                settings.location, connection_pool_class=ClusterNodePool, **options
            )
        )
    if settings.sentinel is not None:
        manager = redis.sentinel.Sentinel(
            settings.sentinel.sentinels,
            sentinel_kwargs=_sentinel_options(settings.sentinel, options, Retry(NoBackoff(), 0)),
        )
        _reaching_sentinels(
            manager, settings.sentinel.tls, (SentinelConnection, SentinelSSLConnection)
        )
        primary = _primary_options(
            settings.location, options, (PrimaryConnection, PrimarySSLConnection)
        )
        # master_for is unannotated; it returns its default redis_class, Redis.
        client: redis.Redis = manager.master_for(
            settings.sentinel.service_name,
            connection_pool_class=BlockingSentinelConnectionPool,
            **primary,
        )
        return client
    pool = ReconnectingPool.from_url(
        settings.location, reconnects=reconnects or Reconnects(), **options, **sync_packing()
    )
    return redis.Redis.from_pool(pool)


def aconnect(
    settings: BackendSettings, options: dict[str, Any], reconnects: Reconnects | None = None
) -> AsyncClient:
    """Asyncio twin of ``connect``."""
    if settings.cluster:
        # redis-py's asyncio cluster has no blocking pool: a full node pool raises at once.
        return reading_commands_from_any_node(
            redis.asyncio.RedisCluster.from_url(settings.location, **_without_pool_timeout(options))
        )
    if settings.sentinel is not None:
        manager = redis.asyncio.sentinel.Sentinel(
            settings.sentinel.sentinels,
            sentinel_kwargs=_sentinel_options(
                settings.sentinel, options, AsyncRetry(NoBackoff(), 0)
            ),
        )
        _reaching_sentinels(
            manager, settings.sentinel.tls, (AsyncSentinelConnection, AsyncSentinelSSLConnection)
        )
        primary = _primary_options(
            settings.location, options, (AsyncPrimaryConnection, AsyncPrimarySSLConnection)
        )
        # master_for is unannotated; it returns its default redis_class, Redis.
        client: redis.asyncio.Redis = manager.master_for(
            settings.sentinel.service_name,
            connection_pool_class=AsyncBlockingSentinelConnectionPool,
            **primary,
        )
        return client
    pool = AsyncReconnectingPool.from_url(
        settings.location, reconnects=reconnects or Reconnects(), **options
    )
    # TCP, TLS or Unix socket. mypy takes any type[X] for unhashable (it checks X's own __hash__).
    pool.connection_class = packing_class(pool.connection_class)  # type: ignore[arg-type]
    return redis.asyncio.Redis.from_pool(pool)
