"""A connection to the primary the sentinels named, which asks them again once it was demoted,
on Redis 6.2 as on Redis 7.

redis-py's Sentinel connection closes itself when the primary it reached refuses a write as a
read-only replica, and raises ``DEMOTED_PRIMARY``: its next call asks the sentinels for the new
primary. It knows the refusal by the READONLY code that opens Redis 7's reply. Redis 6.2 wraps
the refusal a script met (script_errors.py), and every call of ours that writes is a script:
after a failover the connection stayed with the demoted primary, and a worker failed each call
until it restarted (docs/scaling.md, Sentinel).
"""

from collections.abc import Callable
from typing import Any

import redis
import redis.asyncio.sentinel
import redis.connection
import redis.sentinel

from .script_errors import unwrapped

# redis-py's words when the primary the sentinels named answered READONLY: it refused the call.
DEMOTED_PRIMARY = "The previous master is now a slave"


def demoted_in_a_script(exc: redis.ResponseError, is_master: bool) -> bool:
    """Tell whether ``exc``, read from the primary the sentinels named (``is_master``), is
    Redis 6.2's wrapped READONLY: the server was made a replica. redis-py's Sentinel connection
    reads the bare one itself."""
    return is_master and isinstance(unwrapped(exc), redis.exceptions.ReadOnlyError)


class PrimaryConnection(redis.sentinel.SentinelManagedConnection):
    """redis-py's Sentinel connection, which leaves a primary demoted on Redis 6.2 too."""

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except redis.ResponseError as exc:
            if not demoted_in_a_script(exc, self.connection_pool.is_master):
                raise
            close: Callable[[], None] = self.disconnect  # untyped in redis-py
            close()
            raise redis.ConnectionError(DEMOTED_PRIMARY) from exc


class PrimarySSLConnection(PrimaryConnection, redis.connection.SSLConnection):
    """``PrimaryConnection`` over TLS."""


class AsyncPrimaryConnection(redis.asyncio.sentinel.SentinelManagedConnection):
    """Asyncio twin of ``PrimaryConnection``."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except redis.ResponseError as exc:
            if not demoted_in_a_script(exc, self.connection_pool.is_master):
                raise
            await self.disconnect()
            raise redis.ConnectionError(DEMOTED_PRIMARY) from exc


class AsyncPrimarySSLConnection(AsyncPrimaryConnection, redis.asyncio.connection.SSLConnection):
    """``AsyncPrimaryConnection`` over TLS."""
