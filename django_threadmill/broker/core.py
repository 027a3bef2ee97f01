"""The base every part of the Broker builds on: clients, scripts, and how a call is sent.

The Broker is split by section (enqueue, reads, worker transitions, lifecycle), one module each,
all subclasses of ``BrokerCore``; ``broker.py`` joins them into the one ``Broker`` callers use.
"""

import itertools
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from functools import cached_property, partial
from typing import Any

import redis
from redis.commands.core import AsyncScript, Script
from redis.exceptions import NoScriptError, RedisClusterException

from ..codec.ids import queue_of
from ..conf.settings import BackendSettings, socket_timeout_of
from ..conf.topology import Durability, tls_arguments
from ..exceptions import BrokerUnavailable
from .calls import (
    Command,
    asent_again,
    script_command,
    send_confirmed_apart,
    send_each,
    sent_again,
)
from .connection import (
    demoted,
    make_async_client,
    make_blocking_client,
    make_client,
    sentinel_timeout_of,
    translated_errors,
)
from .down_nodes import DownNodes
from .keys import KeySpace, QueueKeys, queue_parts, routed_task_id, shard_layout, shard_of
from .metrics import Tally
from .off_loop import off_the_loop
from .outbox import OutboxSignal
from .per_loop import PerLoop
from .pinned import Pins, pinned
from .raw_replies import RAW
from .reconnects import Reconnects
from .scripts import READ_ONLY, ScriptCall, ScriptName, register_scripts, script_source
from .topology import AsyncClient, SyncClient
from .types import Lease
from .wake import IdleWaits

# The errors ``translated_errors`` translates: redis-py's (a cluster's are not RedisErrors).
REDIS_ERRORS = (redis.RedisError, RedisClusterException)


class BrokerCore:
    """Redis access for one backend alias. Thread-safe: redis-py pools its connections."""

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.keyspace = KeySpace(settings.key_prefix, settings.alias)
        # The timeouts each Redis call and its error translation use, worked out once.
        self._read_timeout_s = socket_timeout_of(settings)[1]
        self._sentinel_timeout_s = sentinel_timeout_of(settings)
        # LOCATION's TLS set-up, to ask its server why it dropped a connection; not under
        # Sentinel, where the calls go to the primary the sentinels name instead.
        self._tls = (
            tls_arguments(settings.location, settings.connection_options)
            if settings.sentinel is None
            else None
        )
        self._known_queues: set[str] = set()
        # Per sharded queue, whose turn it is to be acquired from first (acquisition.py).
        self._turns: defaultdict[str, Iterator[int]] = defaultdict(itertools.count)
        self._idle = IdleWaits(
            lambda: self.client,
            self._blocking_client,
            self.translated_errors,
            self._read_timeout_s,
        )
        self.tally = Tally()  # metrics of recorded outcomes, until send_metrics sends them
        self.outbox_signal = OutboxSignal()  # outboxes finish filled (broker/workflows.py)
        self._async_clients = PerLoop(self._new_async_client, _close_async_client)
        self.reconnects = Reconnects()  # of every client of this backend (reconnects.py)
        self.down_nodes = DownNodes()  # cluster nodes spared lately, for every client
        self._pins = Pins()  # the connection of its own of each thread inside pinned()

    @property
    def client(self) -> SyncClient:
        """The client this thread's calls use: its own connection inside ``pinned()``, else
        the backend's pooled client."""
        client = self._pins.client
        return self._shared_client if client is None else client

    @cached_property
    def _shared_client(self) -> SyncClient:
        with self.translated_errors():  # a Redis Cluster client reads the slot map when built
            return make_client(self.settings, self.reconnects)

    def pinned(self) -> AbstractContextManager[None]:
        """Have the calling thread's calls in the block go over a connection of its own, for
        a thread that calls Redis at every turn (the ack writer, the prefetcher; pinned.py).
        Under Redis Cluster it changes nothing, and builds no client: that reads the slot map,
        which a thread's start must not wait on or fail with."""
        if self.settings.cluster:
            return nullcontext()
        return pinned(self._pins, self._shared_client)

    def _blocking_client(self, waiters: int) -> SyncClient:
        """Return a new client for ``waiters`` waiter threads (broker/wake.py)."""
        with self.translated_errors():  # a Redis Cluster client reads the slot map when built
            return make_blocking_client(self.settings, waiters)

    def close(self) -> None:
        """Close the sync client's pooled connections, if it was made: for a broker made for
        one call (a test's flush); the shared brokers live as long as their process."""
        self.__dict__.pop("_scripts", None)  # registered on that client
        client = self.__dict__.pop("_shared_client", None)
        if client is not None:
            client.close()
        if isinstance(client, redis.RedisCluster):
            _disconnect_nodes(client)

    @cached_property
    def _scripts(self) -> dict[ScriptName, Script]:
        return register_scripts(self._shared_client)

    def _async_client(self) -> tuple[AsyncClient, dict[ScriptName, AsyncScript]]:
        """Return the asyncio client and scripts of the running loop (pools are per loop)."""
        return self._async_clients.get()

    def _new_async_client(self) -> tuple[AsyncClient, dict[ScriptName, AsyncScript]]:
        client = make_async_client(self.settings, self.reconnects)
        # Only enqueue runs on the asyncio client, and it must not be flagged allow-oom.
        scripts = {name: client.register_script(script_source(name)) for name in ScriptName}
        return client, scripts

    @contextmanager
    def translated_errors(self, *, read: bool = False, client: Any = None) -> Iterator[None]:
        """Turn redis-py errors inside the block into ``BrokerUnavailable`` with the fix; a
        ``read``'s never into ``MaybeApplied``: the block changes nothing. One from a server
        demoted to a replica has the clients connect afresh (reconnects.py). Under Sentinel,
        an error of the primary names the one the sentinels named last to ``client`` (the
        sync pooled client's when None)."""
        settings = self.settings
        try:
            with translated_errors(
                settings.location,
                settings.pool_timeout_s,
                settings.sentinel,
                read=read,
                socket_timeout_s=self._read_timeout_s,
                sentinel_timeout_s=self._sentinel_timeout_s,
                tls=self._tls,
                cluster=settings.cluster,
                primary=lambda: named_primary(
                    self.__dict__.get("_shared_client") if client is None else client
                ),
            ):
                yield
        except BrokerUnavailable as error:
            if demoted(error):
                self.reconnects.demoted()
            raise

    @asynccontextmanager
    async def atranslated_errors(self, *, read: bool = False) -> AsyncIterator[None]:
        """Async twin of ``translated_errors``, for the asyncio client's calls. An error is
        translated in a worker thread (off_loop.py): its translation may probe the server at
        LOCATION or ask the sentinels on blocking sockets, for seconds."""
        try:
            yield
        except REDIS_ERRORS as error:
            client = self._async_client()[0]
            translated = partial(self.translated, error, read=read, client=client)
            raise await off_the_loop(translated) from error

    def raw_command(self, *args: Any, **options: Any) -> Any:
        """Send one command with redis-py's ``options``; return its reply as bytes
        (raw_replies.py). Errors are raised untranslated: call it in ``translated_errors``."""
        execute: Callable[..., Any] = self.client.execute_command  # untyped in redis-py
        return execute(*args, **RAW, **options)

    def _run(self, call: ScriptCall, *, durable: bool = False) -> Any:
        """Send one script call; a ``durable`` one is confirmed per OPTIONS['durability']."""
        if durable and self.settings.durability is not Durability.LOCAL:
            return self._send([call], durable=True)[0]
        # redis-py's Script cannot pass options (a raw call's NEVER_DECODE), so the call is
        # sent here, as Script does: a script Redis lost (NOSCRIPT) is loaded, then sent again
        # (on a cluster as EVAL, calls.py, sent_again). The first call registers the scripts:
        # an INFO.
        with self.translated_errors(read=call.name in READ_ONLY):
            script = self._scripts[call.name]
            execute: Callable[..., Any] = self.client.execute_command  # untyped in redis-py
            try:
                return execute(*_evalsha(script, call), **call.options)
            except NoScriptError:
                return execute(*sent_again(self.client, script, call), **call.options)

    async def _arun(self, call: ScriptCall) -> Any:
        """Async twin of ``_run`` for a call not confirmed, sent by the running loop's client.
        Errors are raised untranslated: call it in ``atranslated_errors``."""
        client, scripts = self._async_client()
        script = scripts[call.name]
        # A new cluster client reads the slot map here, not in its first call: redis-py 8 sends
        # an EVALSHA made before to a random primary, one that may be down, not to its key's.
        await client.initialize()
        try:
            return await client.execute_command(*_evalsha(script, call), **call.options)
        except NoScriptError:
            command = await asent_again(client, script, call)
            return await client.execute_command(*command, **call.options)

    def _send(self, calls: Sequence[ScriptCall], *, durable: bool, in_order: int = 0) -> list[Any]:
        """Send ``calls`` as one pipeline (split by node on a Redis Cluster), the first
        ``in_order`` sure to run before the others; raise any error."""
        with self.translated_errors(read=all(c.name in READ_ONLY for c in calls)):
            outcomes = self._outcomes(calls, durable, in_order)
            for outcome in outcomes:
                if isinstance(outcome, Exception):
                    raise outcome
            return outcomes

    def _outcomes(self, calls: Sequence[ScriptCall], durable: bool, in_order: int) -> list[Any]:
        """Send ``calls`` as ``_send`` does; return per call its reply or its error, untranslated:
        call it in ``translated_errors``."""
        _, outcomes = send_each(
            self.client,
            self._scripts,
            self.settings,
            calls,
            down=self.down_nodes,
            confirm=durable,
            in_order=in_order,
        )
        return outcomes

    def _run_per_queue(
        self, calls: Sequence[ScriptCall], *, durable: bool, in_order: int = 0
    ) -> list[Any]:
        """Send one script call per queue: directly for one, as one pipeline for several (the
        first ``in_order`` sure to run before the others)."""
        if len(calls) == 1:
            return [self._run(calls[0], durable=durable)]
        return self._send(calls, durable=durable, in_order=in_order)

    def _run_each_per_queue(
        self, calls: Sequence[ScriptCall], *, durable: bool = False, in_order: int = 0
    ) -> list[Any]:
        """As ``_run_per_queue``, but a call's own error (a key of another type in its queue,
        its Redis Cluster primary down) is its reply, translated, where the others' replies
        stand: raised, it dropped what they did. An error every call met (a Redis gone, a
        replica) is raised."""
        if len(calls) == 1:  # its error is every call's: raised
            return [self._run(calls[0], durable=durable)]
        return _unless_every_one_failed(self._run_each(calls, durable=durable, in_order=in_order))

    def _run_each(
        self, calls: Sequence[ScriptCall], *, durable: bool = False, in_order: int = 0
    ) -> list[Any]:
        """Send ``calls`` in one pipeline (split by node on a Redis Cluster), the first
        ``in_order`` sure to run before the others, ``durable`` ones confirmed per
        OPTIONS['durability']; return per call its reply or its error, translated, even when
        every call met one (each may be its own queue's key of another type). An error of the
        round trip itself is raised, but for a single call, sent alone as ``_run`` sends it:
        whatever it met is its reply."""
        if len(calls) == 1:
            try:
                return [self._run(calls[0], durable=durable)]
            except BrokerUnavailable as exc:
                return [exc]
        with self.translated_errors():
            outcomes = self._outcomes(calls, durable, in_order)
        return self._each_translated(outcomes)

    @property
    def fails_by_node(self) -> bool:
        """Tell whether a round may fail on one node while the others answer: on a Redis
        Cluster, where a node down fails its own calls alone (calls.py)."""
        return isinstance(self.client, redis.RedisCluster)

    def _run_each_confirmed(
        self, calls: Sequence[ScriptCall]
    ) -> list[tuple[Any, BrokerUnavailable | None]]:
        """As ``_run_each_per_queue``, confirmed per OPTIONS['durability'], each call's failed
        confirmation given apart from its reply (calls.py, ``send_confirmed_apart``)."""
        with self.translated_errors():
            answers = send_confirmed_apart(
                self.client, self._scripts, self.settings, calls, down=self.down_nodes
            )
        replies = _unless_every_one_failed(self._each_translated([reply for reply, _ in answers]))
        return [(reply, failed) for reply, (_, failed) in zip(replies, answers, strict=True)]

    def _each_translated(self, outcomes: list[Any]) -> list[Any]:
        """Return ``outcomes``, a pipeline's replies, with their errors translated."""
        return [self.translated(o) if isinstance(o, Exception) else o for o in outcomes]

    async def _aeach_translated(self, outcomes: list[Any]) -> list[Any]:
        """Async twin of ``_each_translated``: off the loop when one is an error, as in
        ``atranslated_errors``."""
        if not any(isinstance(outcome, Exception) for outcome in outcomes):
            return outcomes
        return await off_the_loop(partial(self._each_translated, outcomes))

    def translated(
        self, error: Exception, *, read: bool = False, client: Any = None
    ) -> BrokerUnavailable:
        """Return a call's ``error`` (one of a pipeline's replies) as ``translated_errors``
        raises it; raise an error it leaves as it is."""
        try:
            with self.translated_errors(read=read, client=client):
                raise error
        except BrokerUnavailable as exc:
            return exc

    def queue_keys(self, queue: str) -> QueueKeys:
        return self.keyspace.queue(queue)

    def wake_on_free(self, queue: str) -> int:
        """Return 1 when ``queue`` has a concurrency limit, else 0: the scripts' flag to wake
        an idle fetcher when they free one of its slots (acquire held its ready tasks back
        without passing a baton, docs/schedules.md, Per-queue limits)."""
        return int(self.settings.limit_of(queue).concurrency is not None)

    def parts(self, queue: str) -> list[str]:
        """Return the names whose keys hold ``queue``: itself, or one per shard (keys.py)."""
        return list(queue_parts(self.settings.alias, queue, self.settings.shards_of(queue)))

    def sharded_layouts(self, queues: Iterable[str]) -> list[str]:
        """Return the ``KeySpace.layouts`` members of those ``queues`` that are sharded."""
        return [
            shard_layout(queue, shards)
            for queue in queues
            if (shards := self.settings.shards_of(queue)) > 1
        ]

    def part_in(self, queue: str, key: str) -> str:
        """Return the part of ``queue`` that ``key`` (a task id, or a route) lives in."""
        shards = self.settings.shards_of(queue)
        if shards == 1:
            return queue
        return queue_parts(self.settings.alias, queue, shards)[shard_of(key, shards)]

    def by_part[T](
        self, items: Iterable[T], lease_of: Callable[[T], Lease], also: Iterable[str] = ()
    ) -> dict[str, list[T]]:
        """Group ``items`` by the queue part their lease's task lives in, in first-seen order.

        Queues in ``also`` get a group (one per shard) even when no item is theirs.
        """
        groups: dict[str, list[T]] = defaultdict(
            list, {part: [] for queue in also for part in self.parts(queue)}
        )
        for item in items:
            lease = lease_of(item)
            groups[self.part_in(lease.queue, lease.task_id)].append(item)
        return groups

    def part_of(self, task_id: str) -> str | None:
        """Return the part whose keys hold ``task_id``, or None if the id is not one of ours."""
        queue = queue_of(task_id)
        return None if queue is None else self.part_in(queue, task_id)

    def routed_id(self, queue: str, candidates: Iterable[str], route: str) -> str:
        """Return the first of ``candidates`` that lives in ``part_in(queue, route)``."""
        return routed_task_id(candidates, route, self.settings.shards_of(queue))

    def record_key(self, task_id: str, part: str | None = None) -> str | None:
        """Return the record key of ``task_id`` in ``part`` (an outbox entry's, of any shard
        count), else in the part the settings' count gives; None if the id is not ours."""
        part = self.part_of(task_id) if part is None else part
        return None if part is None else self.queue_keys(part).record(task_id)

    def parts_on(
        self, down: Mapping[str, BrokerUnavailable], parts: Iterable[str]
    ) -> dict[str, BrokerUnavailable]:
        """Return those of the queue ``parts`` on a Redis Cluster node of ``down`` (by name),
        each with that node's error: no read of theirs answers."""
        if not down or not self.fails_by_node:
            return {}
        nodes = {part: self.node_of(self.queue_keys(part).ready) for part in parts}
        return {part: down[node] for part, node in nodes.items() if node in down}

    def node_of(self, key: str) -> str:
        """Return the name ("host:port") of the Redis Cluster node that holds ``key``, by the
        client's slot map."""
        client = self.client
        assert isinstance(client, redis.RedisCluster)  # a single Redis has no nodes to name
        node_of: Callable[[str], Any] = client.get_node_from_key  # untyped in redis-py
        return str(node_of(key).name)


def _evalsha(script: Script | AsyncScript, call: ScriptCall) -> Command:
    """Return the EVALSHA command of ``call``, ``script`` being its registered script."""
    return script_command(call, "EVALSHA", script.sha)


async def _close_async_client(made: tuple[AsyncClient, dict[ScriptName, AsyncScript]]) -> None:
    """Close a loop's client as the loop shuts down: its connections end with it."""
    await made[0].aclose()


def _unless_every_one_failed(outcomes: list[Any]) -> list[Any]:
    """Return ``outcomes`` (translated), or raise the first error when every one is an error:
    a Redis gone or a replica, not one queue's key."""
    errors = [outcome for outcome in outcomes if isinstance(outcome, BrokerUnavailable)]
    if errors and len(errors) == len(outcomes):
        raise errors[0]
    return outcomes


def _disconnect_nodes(client: redis.RedisCluster) -> None:
    """Disconnect the pool of each node ``client`` reached: redis-py before 8.0 leaves them
    connected at ``close()``, a socket per node left by a broker made for one call (a health
    probe run in-process, where a test run fails on the ResourceWarning)."""
    nodes: Callable[[], list[Any]] = client.get_nodes  # untyped in redis-py
    for node in nodes():
        if node.redis_connection is not None:
            node.redis_connection.connection_pool.disconnect()


def named_primary(client: Any) -> str | None:
    """Return the address ("host:port") of the primary the sentinels named last to ``client``,
    None for a client of one Redis or a Redis Cluster, or before any lookup: the checks and
    the errors name that server, as LOCATION's host is not used under Sentinel."""
    # redis-py's Sentinel pool notes the address of each lookup; not in its stubs.
    address = getattr(getattr(client, "connection_pool", None), "master_address", None)
    return None if address is None else f"{address[0]}:{address[1]}"
