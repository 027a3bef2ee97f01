"""Create Redis clients from settings and turn redis-py errors into ones that say the fix."""

import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import MasterNotFoundError as AsyncMasterNotFoundError
from redis.backoff import NoBackoff

from ..conf.settings import BackendSettings
from ..conf.topology import SentinelSettings, masked_location
from ..exceptions import BrokerRefused, BrokerUnavailable, MaybeApplied
from .no_primary import PROBE_TIMEOUT_S, translated_sentinel_errors
from .reconnects import Reconnects
from .script_errors import reply_of, unwrapped
from .sentinel_primary import DEMOTED_PRIMARY
from .tls import tls_refusal
from .topology import AsyncClient, SyncClient, aconnect, connect
from .wrong_server import wrong_server

# redis-py's message when a BlockingConnectionPool found no free connection within its timeout.
POOL_TIMED_OUT = "No connection available."

# Replies (redis-py strips "ERR ") that mean one of our keys holds something we never wrote.
# They are reported as unavailable: callers retry, and nothing is dropped until it is fixed.
DAMAGED_DATA_ERRORS = (
    "WRONGTYPE",
    "value is not an integer",
    "hash value is not an integer",
    "value is not a valid float",
    "increment or decrement would overflow",  # a counter set by hand near 2**63 (P:seq)
)

# Redis's words for a command an ACL user may not run, or a key it may not touch, that a script
# called: redis-py maps neither to NoPermissionError (Redis 6.2 and 7.0; then 7.2+ and Valkey).
SCRIPT_ACL_REFUSALS = ("The user executing the script can't", "ACL failure in script")
# Redis's words for a command it does not know, up to the arguments it goes on to quote: those of
# SCRIPT LOAD and EVAL are a script's source, which said nothing of the command to restore.
# Quoted in backticks by servers before Redis 7 (6.2 among them).
UNKNOWN_COMMAND = re.compile(r"(?:ERR )?unknown command (['`])[^'`]*\1")
# Replies of a Redis that refuses every write for now, whatever the key: it cannot save to disk
# (MISCONF), or too few replicas acknowledge it (NOREPLICAS, min-replicas-to-write). A read-only
# replica's READONLY is one too (``read_only``): redis-py strips that code.
WRITES_REFUSED = ("MISCONF", "NOREPLICAS")
# Redis's reply to a blocked BLPOP it ends: its own when it turns from primary into replica, an
# operator's CLIENT UNBLOCK ... ERROR. It popped nothing.
UNBLOCKED = "UNBLOCKED"
BECAME_REPLICA = "instance state changed"  # the words of the first, e.g. "(master -> replica?)"
MAX_CLIENTS_REPLY = "max number of clients reached"  # Redis's words when maxclients is reached
# How redis-py, and a node spared (down_nodes.py), name the address a connection did not open
# to: "Error 111 connecting to 10.0.0.7:6379. Connection refused."
NODE_ADDRESS = re.compile(r"connecting to (\S+:\d+)")
# redis-py's words when OPTIONS['cluster'] names a server that is not a cluster node.
NOT_A_CLUSTER = "Cluster mode is not enabled on this node"
# What to do about a read-only replica at LOCATION. Waiting does not help, unless LOCATION's
# address moves to the promoted replica (reconnects.py): the clients connect to it again. Under
# Sentinel, redis-py says DEMOTED_PRIMARY instead, with its own fix.
REPLICA_FIX = (
    "point LOCATION at the primary (after a failover: the replica promoted), or use "
    "OPTIONS['sentinel'] to follow the primary through failovers"
)
# How the error of a failed read ends: whatever Redis did with it, it changed nothing. A fact,
# not advice: what to do next is the caller's to say (a probe, a pause, a page, get_result).
READ_CHANGED_NOTHING = "nothing was changed."
# How the error of a write Redis did not answer in time ends: it may run it once it goes on.
WRITE_MAYBE_APPLIED = "the call may have been applied, or may still be once Redis goes on."
# What else keeps a write unanswered while reads go on: Redis holds every write back meanwhile.
WRITES_HELD_BACK = (
    "a FAILOVER under way, a CLIENT PAUSE WRITE: INFO replication, master_failover_state"
)


def _client_options(settings: BackendSettings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": settings.socket_timeout_s,
        "socket_connect_timeout": settings.socket_connect_timeout_s,
        "health_check_interval": 30,
        # A burst waits for a free connection instead of failing at once.
        "max_connections": settings.max_connections,
        "timeout": settings.pool_timeout_s,
    }
    options.update(settings.connection_options)
    return options


def sentinel_timeout_of(settings: BackendSettings) -> float:
    """Return how long each sentinel is given to connect, then to answer, when asked why it
    named no primary (no_primary.py): ``PROBE_TIMEOUT_S``, or the clients' own connect or read
    timeout if shorter (threadmill_health's --timeout), which the lookup waited already."""
    options = _client_options(settings)
    waits: tuple[float | None, ...] = (options["socket_timeout"], options["socket_connect_timeout"])
    return min([PROBE_TIMEOUT_S, *(wait for wait in waits if wait is not None)])


def make_client(settings: BackendSettings, reconnects: Reconnects | None = None) -> SyncClient:
    """Return a pooled client for ``settings.location``; it connects on first use, and again
    in each round of ``reconnects`` (a backend's, shared by its clients; reconnects.py).

    A Redis Cluster client is the exception: it reads the slot map from LOCATION when built.
    """
    return connect(settings, _client_options(settings), reconnects)


def make_blocking_client(settings: BackendSettings, waiters: int) -> SyncClient:
    """Return a client of their own for ``waiters`` threads that each block in a BLPOP.

    Sharing the pool of ``make_client``, they held every connection to a node once a worker's
    queues sat in ``max_connections`` of its slots, and no other call of the worker got one: a
    worker of a queue split in 160 shards over 3 primaries ran nothing. One connection more than
    the waiters is for redis-py's own slot map refresh.
    """
    return connect(settings, {**_client_options(settings), "max_connections": waiters + 1})


class RetryOnFreshConnection(AsyncRetry):
    """Try a call once more on a fresh connection; if that fails too, raise the error of the
    try that had its connection open, if one had: that call may have been applied, whereas the
    last error, a fresh connection refused, would say nothing was written.

    Sentinels that named no primary are not asked again at once: redis-py has just asked each
    in turn, and the second lookup waited once more on each hung one.
    """

    async def call_with_retry[T](
        self, do: Callable[[], Awaitable[T]], fail: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> T:
        # The rest of the arguments passed on as given: redis-py 5 takes none, 8 two more.
        dropped: list[Exception] = []

        async def failed(error: Exception, *count: int) -> Any:
            if _connected(error):
                dropped.append(error)
            outcome = await fail(error, *count)
            if isinstance(error, AsyncMasterNotFoundError):
                raise error
            return outcome

        try:
            return await super().call_with_retry(do, failed, *args, **kwargs)
        except Exception as error:
            if not dropped or _connected(error):
                raise
            raise dropped[0] from error  # the try that may have reached Redis, and the retry


def make_async_client(
    settings: BackendSettings, reconnects: Reconnects | None = None
) -> AsyncClient:
    """Return a pooled asyncio client for ``settings.location``; it connects on first use.

    A call on a connection the server closed meanwhile (its ``timeout`` setting shorter than
    our health check, a restart) is tried once more on a fresh one, as the sync pool does by
    looking at each connection it hands out: the asyncio pool does not. Only enqueue runs on
    this client, and a retried enqueue stores nothing twice (ids are fixed before the call).
    A timeout is not tried again: Redis is silent (paused, overloaded), not gone, and the
    retry, made by connect() and again around each call, held an aenqueue for up to four
    ``socket_timeout`` where enqueue waits one.
    """
    retry = RetryOnFreshConnection(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    return aconnect(settings, {"retry": retry, **_client_options(settings)}, reconnects)


def _connected(error: BaseException) -> bool:
    """Tell whether the connection of a failed call had opened."""
    return "connecting to" not in str(error).lower()  # redis-py's wording when connect() failed


def _with_what_was_written(
    error: BaseException, problem: str, *, read: bool = False
) -> BrokerUnavailable:
    """Return the error for ``problem``, saying whether the failed call can have reached
    Redis: only if the connection was open, and a ``read`` changes nothing even then."""
    if not _connected(error):
        return BrokerUnavailable(problem + "nothing was written.")
    if read:
        return BrokerUnavailable(problem + READ_CHANGED_NOTHING)
    # The connection dropped mid-call (seen in the chaos runs): Redis may have applied the call
    # before it went away, e.g. stored an enqueued task whose reply never arrived.
    return MaybeApplied(problem + "the call may have been applied before the connection dropped.")


@contextmanager
def translated_errors(
    location: str,
    pool_timeout_s: float,
    sentinel: SentinelSettings | None = None,
    *,
    read: bool = False,
    socket_timeout_s: float | None = None,
    sentinel_timeout_s: float = PROBE_TIMEOUT_S,
    tls: Mapping[str, Any] | None = None,
    cluster: bool = False,
    primary: Callable[[], str | None] = lambda: None,
) -> Iterator[None]:
    """Raise ``BrokerUnavailable`` naming the problem and the fix for redis-py's errors;
    ``sentinel``: the sentinels that name the primary, asked why when they named none, each
    given ``sentinel_timeout_s`` to connect and to answer (``sentinel_timeout_of``). ``tls``:
    the TLS arguments of LOCATION's connections (``tls_arguments``), with which its server is
    asked why it closed one at the first write (broker/tls.py); None: it is not asked (under
    Sentinel, the primary is another server).
    ``cluster``: LOCATION names a node of a Redis Cluster, whose other nodes serve on while one
    is unreachable. ``primary``: the address ("host:port") of the primary the sentinels named
    last, None if unknown, for an error of that server to name it.

    A ``read`` (the block changes nothing) is never ``MaybeApplied``, and its errors say that
    nothing was changed (docs/enqueue.md, What each error means, and what was written).
    ``socket_timeout_s``: the clients' read timeout, named when Redis did not answer within it.
    """
    where = masked_location(location)
    try:
        with translated_sentinel_errors(sentinel, where, sentinel_timeout_s):
            yield
    except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
        translated = _translated(
            exc,
            location,
            _server(where, sentinel, primary()),  # asked now: the lookup may have named another
            pool_timeout_s,
            read=read,
            socket_timeout_s=socket_timeout_s,
            sentinel=sentinel,
            tls=tls,
            cluster=cluster,
        )
        if translated is None:
            raise
        raise translated from exc


def _translated(
    exc: redis.RedisError | redis.exceptions.RedisClusterException,
    location: str,
    server: str,
    pool_timeout_s: float,
    *,
    read: bool,
    socket_timeout_s: float | None,
    sentinel: SentinelSettings | None,
    tls: Mapping[str, Any] | None,
    cluster: bool,
) -> BrokerUnavailable | None:
    """Return the error ``translated_errors`` raises for ``exc``, None to let it through;
    ``server``: how an error of the server names it (``_server``)."""
    where = masked_location(location)
    if isinstance(exc, redis.AuthenticationError):
        return BrokerRefused(
            f"Redis at {server} refused the credentials ({exc}). Put the right user and "
            "password in LOCATION, e.g. 'redis://user:password@host:6379/0'."
        )
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return _lacks_permission(server, exc)
    if isinstance(exc, redis.exceptions.BusyLoadingError):  # a ConnectionError, but Redis answered
        return BrokerUnavailable(
            f"Redis at {server} is loading its data from disk ({exc}): it answers again once "
            "loaded, which takes longer the larger the data; nothing was written."
        )
    if isinstance(
        exc, (redis.ConnectionError, redis.TimeoutError, redis.exceptions.InvalidResponse)
    ):
        return _no_reply(
            location,
            server,
            pool_timeout_s,
            exc,
            read=read,
            socket_timeout_s=socket_timeout_s,
            sentinel=sentinel,
            tls=tls,
            cluster=cluster,
        )
    if isinstance(exc, redis.exceptions.MasterDownError):  # a ClusterError to redis-py
        return _cut_off_replica(server, exc)
    if isinstance(exc, (redis.exceptions.ClusterError, redis.exceptions.RedisClusterException)):
        return _cluster_error(location, where, exc, read=read, tls=tls)
    if isinstance(exc, redis.exceptions.AskError):  # MOVED or ASK (MovedError is an AskError)
        return _misrouted(where, exc)
    if isinstance(exc, redis.ResponseError):
        return _translated_reply(server, exc, read=read)
    return None


def _server(where: str, sentinel: SentinelSettings | None, primary: str | None) -> str:
    """Return how an error names the server that made it: LOCATION (``where``); under
    ``sentinel``, with the primary they named for its service, at ``primary`` if known, as
    LOCATION's host is never used (docs/scaling.md, Sentinel)."""
    if sentinel is None:
        return where
    address = f", {primary}" if primary else ""
    return f"{where} (the primary the sentinels named for {sentinel.service_name!r}{address})"


def _lacks_permission(where: str, exc: redis.ResponseError) -> BrokerRefused:
    """Return the error for a command the ACL user may not run, sent or called by a script:
    no wait fixes it (docs/reliability.md, Redis settings we require)."""
    return BrokerRefused(
        f"Redis at {where} refused a command for lack of permission ({exc}). Grant the ACL "
        "user '+@all -@dangerous +info' on this backend's keys, e.g. '~<key_prefix>:*'."
    )


def _cut_off_replica(where: str, exc: redis.exceptions.MasterDownError) -> BrokerUnavailable:
    """Return the error for MASTERDOWN: a replica whose link to its primary is down refuses
    reads too under ``replica-serve-stale-data no``. Redis refused the call, so nothing was
    applied. redis-py makes it a ``ClusterDownError``: caught as one, it read as a Redis
    Cluster mid-failover whose call may have been applied (``MaybeApplied``)."""
    return BrokerUnavailable(
        f"Redis at {where} is a replica cut off from its primary, and set to serve no data "
        f"meanwhile ({exc}). It answers again once it reaches its primary (INFO replication: "
        "master_link_status:up); if it does not, point LOCATION at the primary, or use "
        "OPTIONS['sentinel'] to follow it; nothing was written."
    )


def _cluster_error(
    location: str,
    where: str,
    exc: Exception,
    *,
    read: bool = False,
    tls: Mapping[str, Any] | None = None,
) -> BrokerUnavailable:
    """Return the error for what redis-py's cluster client could not do."""
    refused = tls_refusal(location, where, exc, tls)
    if refused is not None:  # no node reachable because of our own TLS set-up
        return refused
    if NOT_A_CLUSTER in str(exc):
        # No slot map could be read, so no call was sent; no wait fixes the setting.
        return BrokerRefused(
            f"Redis at {where} is not a Redis Cluster ({exc}), but OPTIONS['cluster'] is "
            "True. Remove 'cluster' from OPTIONS for a single Redis, or point LOCATION at a "
            "node of the cluster; nothing was written."
        )
    # redis-py already followed MOVED/ASK and refreshed its slot map; what is left is a
    # cluster without a primary for the slot (mid-failover), a slot in migration whose keys
    # are split between two nodes (a resharding: TRYAGAIN until redis-py gave up), or no node
    # reachable at all.
    return _with_what_was_written(
        exc,
        f"The Redis Cluster at {where} cannot serve this call now ({exc}). Wait for the "
        "failover or the resharding to finish (CLUSTER INFO: cluster_state:ok; CLUSTER NODES "
        "lists no slot in migration), or fix LOCATION; ",
        read=read,
    )


def _misrouted(where: str, exc: redis.exceptions.AskError) -> BrokerUnavailable:
    """Return the error for a key a Redis Cluster node sent elsewhere: only a plain client
    meets it (redis-py's cluster client follows MOVED and ASK itself), so the call was not
    applied and OPTIONS['cluster'] is missing."""
    redirect = "MOVED" if isinstance(exc, redis.exceptions.MovedError) else "ASK"
    return BrokerUnavailable(
        f"Redis at {where} is a node of a Redis Cluster, which serves this key on another node "
        f"({redirect} {reply_of(exc)}). Set OPTIONS['cluster'] = True, so that each key is "
        "sent to its node."
    )


def unknown_command(error: Exception | str) -> str | None:
    """Return Redis's words for a command it does not know (renamed away, or too new for the
    server) from ``error``, a pipeline's annotated one too; None when it says something else."""
    found = UNKNOWN_COMMAND.search(str(error))
    return found[0] if found else None


# What to do about a key of this backend that holds another type, where the key is named just
# before: logged by the reads that leave it out, said by the admin and the health probe.
ANOTHER_TYPE_FIX = "delete it, or give each project its own OPTIONS['key_prefix']"


def wrong_type(error: BaseException) -> bool:
    """Tell whether ``error`` is Redis refusing a command on a key of another type."""
    return isinstance(error, redis.ResponseError) and reply_of(error).startswith("WRONGTYPE")


def refuses_writes(error: BrokerUnavailable) -> bool:
    """Tell whether ``error`` is Redis refusing every write for now, not one key (MISCONF,
    NOREPLICAS, READONLY): a script meets it at its first write, so a call that writes nothing
    (an empty queue's acquire) answers as usual beside it."""
    cause = error.__cause__
    if not isinstance(cause, redis.ResponseError):
        return False
    return reply_of(cause).startswith(WRITES_REFUSED) or read_only(cause)


def slot_not_served(error: BrokerUnavailable) -> bool:
    """Tell whether ``error`` is a Redis Cluster serving no call on a hash slot for now: the
    slot in migration to another node (TRYAGAIN, or MOVED and ASK until redis-py gave up), or
    without a primary mid-failover. Every call on that slot meets it, workers' renewals too."""
    cause = error.__cause__
    if isinstance(cause, (redis.exceptions.ClusterError, redis.exceptions.RedisClusterException)):
        return NOT_A_CLUSTER not in str(cause)
    return isinstance(cause, redis.ResponseError) and (
        isinstance(cause, redis.exceptions.TryAgainError) or reply_of(cause).startswith("TRYAGAIN")
    )


def unreachable(error: BrokerUnavailable) -> bool:
    """Tell whether ``error`` is a connection to Redis that did not open (refused, timed out,
    a cluster node spared): the server is away, and nothing was sent to it."""
    cause = error.__cause__
    return isinstance(cause, (redis.ConnectionError, redis.TimeoutError)) and not _connected(cause)


def demoted(error: BrokerUnavailable) -> bool:
    """Tell whether ``error`` is the server at LOCATION refusing a write as a read-only replica,
    or ending a blocked wait as it became one: behind an address moved to the promoted replica
    (a managed Redis's failover), a connection made afresh reaches the new primary."""
    cause = error.__cause__
    if not isinstance(cause, redis.ResponseError):
        return False
    return read_only(cause) or BECAME_REPLICA in reply_of(cause)


def read_only(exc: redis.ResponseError) -> bool:
    """Tell whether ``exc`` is a read-only replica refusing a write: redis-py raises its
    ``ReadOnlyError`` without the READONLY code."""
    return isinstance(exc, redis.exceptions.ReadOnlyError) or reply_of(exc).startswith("READONLY")


def maybe_too_large(error: BrokerUnavailable) -> bool:
    """Tell whether ``error`` may be Redis refusing a request as too large: its "Protocol
    error" reply, or the connection it closes after it, which a client still writing the
    request meets first, mostly. A connection dropped for any other reason looks the same."""
    cause = error.__cause__
    if isinstance(cause, redis.ResponseError):
        return reply_of(cause).startswith("Protocol error")
    loading = isinstance(cause, redis.exceptions.BusyLoadingError)  # Redis answered
    return isinstance(cause, redis.ConnectionError) and not loading and _connected(cause)


def readable_replies(replies: list[Any]) -> list[Any]:
    """Return pipeline ``replies`` (``raise_on_error=False``), raising any error but a key of
    another type, which stays in its place: a damaged record is one row a page cannot read, not
    a page that fails (docs/lifecycle.md, Damaged records)."""
    for reply in replies:
        if isinstance(reply, Exception) and not wrong_type(reply):
            raise reply
    return replies


def _no_reply(
    location: str,
    server: str,
    pool_timeout_s: float,
    exc: Exception,
    *,
    read: bool = False,
    socket_timeout_s: float | None = None,
    sentinel: SentinelSettings | None = None,
    tls: Mapping[str, Any] | None = None,
    cluster: bool = False,
) -> BrokerUnavailable:
    """Return the error for a call that got no Redis reply: the pool was exhausted, the server
    is no Redis of the kind LOCATION names, it cannot be reached, or it did not answer within
    ``socket_timeout_s`` (``_silent``). ``server``: how an error of the server names it
    (``_server``).

    LOCATION's host is not probed under ``sentinel``: the call went to the primary the
    sentinels named, and whatever answers at that ignored host (a web server) turned a
    connection dropped mid-call into "nothing was written", not ``MaybeApplied``. Nor is it
    asked why it closed a TLS connection at the first write: ``tls`` is None.
    """
    where = masked_location(location)
    if sentinel is not None and str(exc) == DEMOTED_PRIMARY:  # READONLY: not a dropped call
        return BrokerUnavailable(
            f"The primary the sentinels named for Redis at {where} is a read-only replica "
            f"({exc}), which refused the call. During a failover this passes once the "
            "sentinels name the new primary; if it lasts, that server was made a replica "
            "behind the sentinels' back: make it a primary again (REPLICAOF NO ONE) or "
            f"SENTINEL FAILOVER {sentinel.service_name}; nothing was written."
        )
    if str(exc) == POOL_TIMED_OUT:  # raised by the client's own pool, before any I/O
        return BrokerUnavailable(
            f"Every pooled connection to Redis at {where} stayed in use for "
            f"pool_timeout={pool_timeout_s:g}s ({exc}). "
            "Raise OPTIONS['pool_timeout'] or OPTIONS['max_connections'], or find what "
            "holds the connections (a slow Redis?); nothing was written."
        )
    if isinstance(exc, redis.exceptions.MaxConnectionsError):  # a pool that does not wait
        return BrokerUnavailable(
            f"Every pooled connection to Redis at {where} is in use, and redis-py's asyncio "
            f"Redis Cluster client does not wait for one ({type(exc).__name__}). Raise "
            "OPTIONS['max_connections'] (per node and event loop), or find what holds the "
            "connections (a slow Redis?); nothing was written."
        )
    if MAX_CLIENTS_REPLY in str(exc):  # Redis answered, at connect: refused, not dropped
        return BrokerUnavailable(
            f"Redis at {server} has as many clients as its maxclients allows ({exc}). Raise "
            "maxclients, or lower OPTIONS['max_connections'] (per process) or the number of "
            "processes; nothing was written."
        )
    refused = tls_refusal(location, where, exc, tls)
    if refused is not None:  # before the probe: our own TLS set-up, no wrong server
        return refused
    garbled = isinstance(exc, redis.exceptions.InvalidResponse)
    dropped = isinstance(exc, redis.ConnectionError) and _connected(exc)
    handshake = location.startswith("rediss://") and not _connected(exc)
    # A server that garbled a reply, closed an open connection or failed a TLS handshake may
    # be no Redis; one that refused the connection is not there, and one that went silent on
    # an open connection (a slow Redis) would keep the probe waiting too.
    if (garbled or dropped or handshake) and sentinel is None:
        wrong = wrong_server(location, where)
        if wrong is not None:
            return wrong.error()
    if garbled:
        return BrokerUnavailable(
            f"The server at {server} answered with something that is not the Redis protocol "
            f"({exc}). Point LOCATION at Redis; nothing was written."
        )
    silent = _silent(server, exc, socket_timeout_s, read=read)
    if silent is not None:
        return silent
    problem = _unreachable(where, exc, cluster=cluster, sentinel=sentinel)
    return _with_what_was_written(exc, problem, read=read)


def _unreachable(
    where: str, exc: Exception, *, cluster: bool, sentinel: SentinelSettings | None
) -> str:
    """Return the problem of a call whose Redis could not be reached. On a ``cluster`` it names
    the node: the slot map was read, so LOCATION is right, and the other nodes serve their
    slots meanwhile; "Start Redis or fix TASKS LOCATION" sent operators to a setting that was
    fine while one primary was down. Under ``sentinel`` it names the primary they named."""
    if sentinel is not None:
        return _primary_unreachable(where, exc, sentinel.service_name)
    if not cluster:
        return f"Redis at {where} is unreachable ({exc}). Start Redis or fix TASKS LOCATION; "
    address = NODE_ADDRESS.search(str(exc))
    node = f"node {address[1]}" if address else "the node of this call's hash slot"
    return (
        f"The Redis Cluster at {where} cannot reach its {node} ({exc}). Start that node, or "
        "wait for a replica to take over its hash slots (CLUSTER NODES: the node marked fail, "
        "a replica of it promoted to master); its other nodes serve their slots meanwhile; "
    )


def _primary_unreachable(where: str, exc: Exception, service_name: str) -> str:
    """Return the problem of a call whose primary, as the sentinels named it, could not be
    reached: down or restarting, and not yet called down by them; or an address this host
    cannot reach (a container's own). LOCATION's host is never used under Sentinel, so "Start
    Redis or fix TASKS LOCATION" sent operators to a setting that was fine, naming no server."""
    address = NODE_ADDRESS.search(str(exc))
    primary = f"primary {address[1]}" if address else "primary"
    return (
        f"The {primary} the sentinels named for Redis at {where} is unreachable ({exc}). Start "
        "it, or wait for the sentinels to promote a replica once they call it down (SENTINEL "
        f"MASTER {service_name}: flags s_down, o_down, after its down-after-milliseconds); if "
        "this host cannot reach that address, have the sentinels name one it can (the address "
        "of 'sentinel monitor', the replicas' replica-announce-ip); "
    )


def _silent(
    where: str, exc: Exception, socket_timeout_s: float | None, *, read: bool
) -> BrokerUnavailable | None:
    """Return the error for a call Redis took and did not answer within ``socket_timeout_s``
    (a Redis busy, overloaded or frozen, not one gone; for a write, one holding writes back as
    a failover does), or None for any other failure. A write may have been applied, or may be
    once Redis goes on: it still holds the request."""
    if not isinstance(exc, redis.TimeoutError) or not _connected(exc) or socket_timeout_s is None:
        return None
    silent = (
        f"Redis at {where} did not answer within socket_timeout={socket_timeout_s:g}s ({exc}): "
        "it is busy (a long script or command: SLOWLOG GET), overloaded or frozen"
    )
    if read:
        return BrokerUnavailable(f"{silent}; {READ_CHANGED_NOTHING}")
    return MaybeApplied(
        f"{silent}, or holds writes back ({WRITES_HELD_BACK}); {WRITE_MAYBE_APPLIED}"
    )


def _translated_reply(
    where: str, exc: redis.ResponseError, *, read: bool = False
) -> BrokerUnavailable | None:
    """Return the error to raise for an error reply from Redis, or None to let it through.

    The message keeps redis-py's whole text: inside a pipeline it names the command and key.
    On Redis 6.2 it is the text Redis 7 sends (``unwrapped``).
    """
    exc = unwrapped(exc)
    message = reply_of(exc)
    refused = _refused_user(where, exc)
    if refused is not None:
        return refused
    # redis-py strips the error code of the replies it maps to classes (OOM, READONLY, ...).
    if isinstance(exc, redis.exceptions.OutOfMemoryError) or message.startswith("OOM"):
        return BrokerUnavailable(
            f"Redis at {where} is out of memory ({exc}). Raise maxmemory, or purge "
            "old results; nothing was written."
        )
    if message.startswith(DAMAGED_DATA_ERRORS):
        return BrokerUnavailable(
            f"Redis at {where} holds a value of the wrong kind in one of this backend's keys "
            f"({exc}). Something other than django-threadmill wrote to it: delete that "
            "key, or give each project its own OPTIONS['key_prefix']."
        )
    if message.startswith("DB index is out of range"):
        return BrokerRefused(
            f"Redis at {where} has no such database ({exc}). Use a database number below its "
            "'databases' setting (16 by default) at the end of LOCATION, e.g. "
            "'redis://host:6379/0'."
        )
    if unknown := unknown_command(message):
        return BrokerRefused(
            f"Redis at {where} does not know a command this backend sends ({unknown}): it was "
            "renamed or disabled (rename-command in its config). Enable it: the commands of "
            "the ACL '+@all -@dangerous +info' must be there under their own names."
        )
    if message.startswith("Protocol error"):  # then Redis closes the connection
        return BrokerUnavailable(
            f"Redis at {where} refused a request as too large ({exc}): an argument past its "
            "proto-max-bulk-len, or a request past its client-query-buffer-limit. Raise them "
            "in redis.conf, or lower OPTIONS['max_payload_bytes'] for an enqueue, "
            "OPTIONS['max_result_bytes'] for a worker's finish call (threadmill.W006); "
            "nothing was written."
        )
    if message.startswith(WRITES_REFUSED):
        return _writes_refused(where, exc)
    if read_only(exc) or message.startswith(UNBLOCKED):
        return _replica_refusal(where, exc)
    if isinstance(exc, redis.exceptions.TryAgainError) or message.startswith(
        ("LOADING", "BUSY", "TRYAGAIN")
    ):
        return _not_now(where, exc, read=read)
    lost_again = isinstance(exc, redis.exceptions.NoScriptError)  # a first one is reloaded
    return _scripts_lost_again(where, exc) if lost_again else None


def _refused_user(where: str, exc: redis.ResponseError) -> BrokerRefused | None:
    """Return the error for a reply refusing the client's user, or None for any other: no
    credentials, or a command a script called that the user's ACL does not allow."""
    message = reply_of(exc)
    if message.startswith(("NOAUTH", "WRONGPASS")):
        return BrokerRefused(
            f"Redis at {where} needs credentials ({exc}). Add them to LOCATION, e.g. "
            "'redis://user:password@host:6379/0'."
        )
    return _lacks_permission(where, exc) if message.startswith(SCRIPT_ACL_REFUSALS) else None


def _writes_refused(where: str, exc: redis.ResponseError) -> BrokerUnavailable:
    """Return the error for a call Redis refused as it refuses every write for now: a script
    meets it at its first write, so it wrote nothing."""
    if reply_of(exc).startswith("MISCONF"):
        return BrokerUnavailable(
            f"Redis at {where} refuses writes: it cannot save to disk ({exc}). Fix its disk, "
            "'dir' or 'save' setting; nothing was written."
        )
    return BrokerUnavailable(
        f"Redis at {where} refuses writes: fewer replicas acknowledged it within its "
        f"min-replicas-max-lag than its min-replicas-to-write asks for ({exc}). Check its "
        "replicas (INFO replication: connected_slaves, each one's lag): it takes writes again "
        "once enough are back in sync, or once a failover promotes one that is; nothing was "
        "written."
    )


def _replica_refusal(where: str, exc: redis.ResponseError) -> BrokerUnavailable:
    """Return the error for a write a read-only replica refused (READONLY), or for a blocked
    wait Redis ended (UNBLOCKED): raised raw, the latter killed the worker's prefetcher when
    its Redis was made a replica (docs/reliability.md, the replica row)."""
    if read_only(exc):
        return BrokerUnavailable(
            f"Redis at {where} is a read-only replica ({exc}): {REPLICA_FIX}; nothing was written."
        )
    if BECAME_REPLICA in reply_of(exc):
        return BrokerUnavailable(
            f"Redis at {where} became a read-only replica and ended a blocked wait ({exc}): "
            f"{REPLICA_FIX}; {READ_CHANGED_NOTHING}"
        )
    return BrokerUnavailable(
        f"Redis at {where} ended a blocked wait: a client ran CLIENT UNBLOCK ... ERROR on it "
        f"({exc}); {READ_CHANGED_NOTHING}"
    )


def _not_now(where: str, exc: redis.ResponseError, *, read: bool) -> BrokerUnavailable:
    """Return the error for a call Redis refused for now (BUSY running a script, LOADING its
    data, TRYAGAIN mid-resharding): it did not run it."""
    if not read:
        return BrokerUnavailable(f"Redis at {where} cannot serve writes now ({exc}).")
    busy = reply_of(exc).startswith("BUSY")
    problem = "is busy running a script" if busy else "cannot serve this read now"
    return BrokerUnavailable(f"Redis at {where} {problem} ({exc}); {READ_CHANGED_NOTHING}")


def _scripts_lost_again(where: str, exc: redis.ResponseError) -> BrokerUnavailable:
    """Return the error for a call that met NOSCRIPT after its script was loaded again.

    A first NOSCRIPT is not seen here: the script is loaded and the call sent once more
    (core.py, calls.py). A second one means the scripts went again in between; the call did
    not run.
    """
    return BrokerUnavailable(
        f"Redis at {where} lost this backend's Lua scripts again just after they were "
        f"loaded ({exc}): a SCRIPT FLUSH, a restart or a failover came in between; the "
        "call did not run, so nothing was written: try it again."
    )
