"""Send script calls as one pipeline, each node's share confirmed per the durability mode.

Scripts go out as raw EVALSHA (redis-py's cluster pipeline refuses Script objects); a call that
meets NOSCRIPT wrote nothing, so its script is loaded and only that call is sent again. Calls
that must run before the others of their pipeline go as EVAL, with their source: they cannot
meet NOSCRIPT, so a second round never puts them after the calls they came before. On a Redis
Cluster the pipeline splits the calls by node itself: each call stays in its queue's slot, and
the calls that met NOSCRIPT go again as EVAL, with their source (``sent_again``).

An error that ends the second round (its SCRIPT LOAD on one Redis, or its pipeline) is the
outcome of the calls it carried alone: the first round's calls keep their replies, so a caller
learns which of its calls were written.

redis-py's cluster pipeline fails as a whole, having written nothing, when it cannot connect
to one of its nodes (a primary down with no replica to take over, under
``cluster-require-full-coverage no``). A round that spans several nodes is then sent again,
each node's share a pipeline of its own after a PING to its node, and the failure is the
outcome of that node's calls alone: the queues whose slots are still served go on
(docs/scaling.md, Batches that span queues). The node is remembered a while (down_nodes.py):
the rounds that include it go share by share from the start, its share failing at once.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script
from redis.exceptions import NoScriptError, RedisClusterException

from ..conf.settings import BackendSettings
from ..exceptions import BrokerUnavailable
from .down_nodes import DownNodes
from .durability import check_confirmed, confirm_command, unconfirmed
from .scripts import ScriptCall, ScriptName
from .topology import AsyncClient, SyncClient

type Command = tuple[str | int | float | bytes, ...]
type Scripts = Mapping[ScriptName, Script] | Mapping[ScriptName, AsyncScript]
CLUSTERS = (redis.RedisCluster, redis.asyncio.RedisCluster)
# What a pipeline raises as a whole: redis-py's errors (a cluster's are not all RedisErrors).
REDIS_ERRORS = (redis.RedisError, RedisClusterException)
ONE_NODE = ""  # the node name of every call on one Redis


@dataclass(frozen=True, slots=True)
class Batch:
    """The commands of one pipeline and where the script replies sit among them."""

    commands: list[tuple[Command, dict[str, Any]]]
    first_call: int  # position of the first script call; plain commands come before
    call_nodes: list[str]  # per call, the node it went to (ONE_NODE on one Redis)
    confirmed_on: dict[str, str]  # per confirmed node, in command order: a key it must own
    before_nodes: list[str]  # per plain command, the node of its key (ONE_NODE on one Redis)

    @property
    def nodes(self) -> list[str]:
        """Return the node of each plain command, then of each call."""
        return [*self.before_nodes, *self.call_nodes]

    def script_replies(self, replies: list[Any]) -> list[Any]:
        return replies[self.first_call : self.first_call + len(self.call_nodes)]

    def confirmations(self, replies: list[Any]) -> list[Any]:
        return replies[self.first_call + len(self.call_nodes) :]

    def shares(self) -> list[tuple[str | None, list[int]]]:
        """Return the positions of the commands grouped by where they go, each with its node:
        the node of the plain commands first, then each node's calls with its confirmation,
        in command order. A plain command goes with its key's node, so a node down fails
        the plain commands on it alone, and is remembered and spared like a call's."""
        by_node: dict[str | None, list[int]] = {}
        for position, node in enumerate(self.nodes):
            by_node.setdefault(node, []).append(position)
        first_confirmation = self.first_call + len(self.call_nodes)
        for position, node in enumerate(self.confirmed_on, start=first_confirmation):
            by_node.setdefault(node, []).append(position)
        return [(node, share) for node, share in by_node.items() if share]


def _owner(client: redis.RedisCluster | redis.asyncio.RedisCluster, key: str) -> str:
    """Return the name of the node that owns ``key``'s slot."""
    node = client.get_node_from_key(key)
    assert node is not None  # None is only for a replica asked for (replica=True)
    return node.name


def _build(
    client: SyncClient | AsyncClient,
    scripts: Scripts,
    calls: Sequence[ScriptCall],
    before: Sequence[Command],
    confirm: Command | None,
    in_order: int,
) -> Batch:
    commands: list[tuple[Command, dict[str, Any]]] = [(command, {}) for command in before]
    for i, call in enumerate(calls):
        script = scripts[call.name]
        # EVAL carries the source the script was registered from (our .lua files' text).
        how = ("EVAL", script.script) if i < in_order else ("EVALSHA", script.sha)
        commands.append((script_command(call, *how), call.options))
    if not isinstance(client, CLUSTERS):
        nodes = [ONE_NODE] * len(calls)
        confirmed_on = {ONE_NODE: ""} if confirm is not None else {}
        commands += [(confirm, {})] if confirm is not None else []
        return Batch(commands, len(before), nodes, confirmed_on, [ONE_NODE] * len(before))
    nodes = [_owner(client, call.keys[0]) for call in calls]
    # A plain command's key follows its name: the SADDs that register queues (enqueue.py).
    before_nodes = [_owner(client, str(command[1])) for command in before]
    confirmed_on = {}
    if confirm is not None:
        # WAIT covers the writes of its own connection: one per node, in that node's share.
        confirmed_on = {node: call.keys[0] for node, call in zip(nodes, calls, strict=True)}
        for key in confirmed_on.values():
            commands.append((confirm, {"target_nodes": client.get_node_from_key(key)}))
    return Batch(commands, len(before), nodes, confirmed_on, before_nodes)


def _unloaded(reply: Any) -> bool:
    return isinstance(reply, NoScriptError)


class Sending:
    """One batch on its way: a first round, and a second for the calls that met NOSCRIPT.

    Each call ends with its reply or its error; a failed confirmation becomes the error of every
    call on that node, after the second round, so the reloaded calls still run.
    """

    def __init__(
        self,
        client: SyncClient | AsyncClient,
        scripts: Scripts,
        settings: BackendSettings,
        calls: Sequence[ScriptCall],
        before: Sequence[Command],
        confirm: bool,
        in_order: int = 0,
    ) -> None:
        self.client = client
        self.scripts = scripts
        self.settings = settings
        self.calls = list(calls)
        self.before = before
        self.in_order = in_order  # leading calls that go as EVAL (on a cluster, all of round 2)
        self.before_replies: list[Any] = []
        self.confirm = confirm_command(settings) if confirm else None
        self.replies: list[Any] = [NoScriptError()] * len(self.calls)  # unsent reads as unloaded
        self.nodes = [ONE_NODE] * len(self.calls)
        self.rounds = 0
        self.sent: list[int] = []  # indexes of the calls in the current round
        self.batch: Batch | None = None
        self.unconfirmed: dict[str, BrokerUnavailable] = {}

    def next_batch(self) -> Batch | None:
        """Return the pipeline to send next, or None when every call has an answer."""
        self.sent = [i for i, reply in enumerate(self.replies) if _unloaded(reply)]
        if self.rounds == 2 or not self.sent:
            return None
        calls = [self.calls[i] for i in self.sent]
        self.batch = _build(
            self.client, self.scripts, calls, self.before, self.confirm, self.in_order
        )
        # A Redis Cluster's second round goes as EVAL (``sent_again``): no call waits for a
        # SCRIPT LOAD, which redis-py sends to every primary, down ones included.
        self.before, self.in_order = (), len(self.calls) if isinstance(self.client, CLUSTERS) else 0
        self.rounds += 1
        return self.batch

    def take(self, replies: list[Any]) -> set[ScriptName]:
        """Record a round's replies; return the scripts to load before the next round (none
        on a Redis Cluster, where it goes as EVAL)."""
        batch = self.batch
        assert batch is not None
        self.before_replies = self.before_replies or replies[: batch.first_call]
        for i, reply, node in zip(
            self.sent, batch.script_replies(replies), batch.call_nodes, strict=True
        ):
            self.replies[i], self.nodes[i] = reply, node
        for node, reply in zip(batch.confirmed_on, batch.confirmations(replies), strict=True):
            try:
                check_confirmed(self.settings, reply)
                self._check_still_owned(node, batch.confirmed_on[node])
            except BrokerUnavailable as exc:
                self.unconfirmed.setdefault(node, exc)
        if isinstance(self.client, CLUSTERS):
            return set()
        return {self.calls[i].name for i in self.sent if _unloaded(self.replies[i])}

    @contextmanager
    def round_errors(self) -> Iterator[None]:
        """Raise an error of the first round: no call has an answer yet. Make one of the
        second round (its SCRIPT LOAD too) the outcome of the calls it carried, and theirs
        alone: raised, it said "nothing was written" of calls the first round had written."""
        try:
            yield
        except (redis.RedisError, RedisClusterException) as exc:
            if self.rounds == 1:
                raise
            for i in self.sent:
                self.replies[i] = exc

    def outcomes(self) -> list[Any]:
        """Return per call its reply, or the error it met or its node's failed confirmation."""
        return [
            reply if isinstance(reply, Exception) or failed is None else failed
            for reply, failed in zip(self.replies, self.unconfirmed_calls(), strict=True)
        ]

    def unconfirmed_calls(self) -> list[BrokerUnavailable | None]:
        """Return per call its node's failed confirmation, or None where it was confirmed."""
        return [self.unconfirmed.get(node) for node in self.nodes]

    def _check_still_owned(self, node: str, key: str) -> None:
        """Refuse a confirmation from a node that lost the slot during the call.

        redis-py follows MOVED by sending the call to the new owner and updating its slot
        map, but the WAIT went to the old node, whose answer says nothing about this write.
        """
        client = self.client
        if isinstance(client, CLUSTERS) and _owner(client, key) != node:
            raise unconfirmed(self.settings, f"its slot moved from {node} during the call")


def send_each(
    client: SyncClient,
    scripts: dict[ScriptName, Script],
    settings: BackendSettings,
    calls: Sequence[ScriptCall],
    *,
    down: DownNodes,
    before: Sequence[Command] = (),
    confirm: bool = False,
    in_order: int = 0,
) -> tuple[list[Any], list[Any]]:
    """Send ``before`` and then ``calls`` in one pipeline, the first ``in_order`` calls sure to
    run before the others; ``down``: the nodes spared lately, and the memory of those to spare.

    Return the replies of ``before`` and per call its reply or error (errors are not raised).
    """
    sending = Sending(client, scripts, settings, calls, before, confirm, in_order)
    return _sent(client, scripts, down, sending).before_replies, sending.outcomes()


def send_confirmed_apart(
    client: SyncClient,
    scripts: dict[ScriptName, Script],
    settings: BackendSettings,
    calls: Sequence[ScriptCall],
    *,
    down: DownNodes,
) -> list[tuple[Any, BrokerUnavailable | None]]:
    """Send ``calls`` in one pipeline, confirmed per the durability mode; return per call its
    reply or error, and apart its node's failed confirmation (None: confirmed), so that the
    caller can undo what a replica may not have instead of losing the reply."""
    sending = Sending(client, scripts, settings, calls, (), confirm=True)
    _sent(client, scripts, down, sending)
    return list(zip(sending.replies, sending.unconfirmed_calls(), strict=True))


def _sent(
    client: SyncClient, scripts: dict[ScriptName, Script], down: DownNodes, sending: Sending
) -> Sending:
    """Send the rounds of ``sending`` (made with ``client`` and ``scripts``); return it, every
    call answered."""
    unloaded: set[ScriptName] = set()
    while (batch := sending.next_batch()) is not None:
        with sending.round_errors():
            for name in unloaded:
                client.script_load(scripts[name].script)
            unloaded = sending.take(_executed(client, down, batch))
    return sending


def read_each(
    client: SyncClient, down: DownNodes, reads: Sequence[tuple[Command, dict[str, Any]]]
) -> list[Any]:
    """Send ``reads`` (each a command whose key follows its name, with its options) in one
    pipeline; return per read its reply or its error. On a Redis Cluster a node that does not
    answer fails its own reads alone, and is remembered and spared, as for script calls
    (module docstring); raise when no node answered."""
    nodes = [
        _owner(client, str(command[1])) if isinstance(client, CLUSTERS) else ONE_NODE
        for command, _ in reads
    ]
    return _executed(client, down, Batch(list(reads), len(reads), [], {}, nodes))


def sent_again(client: SyncClient, script: Script, call: ScriptCall) -> Command:
    """Return the command that sends ``call`` again after it met NOSCRIPT: on one Redis,
    EVALSHA once its script is loaded; on a Redis Cluster, EVAL with the source.

    redis-py's cluster client sends a bare SCRIPT LOAD to every primary: with one of them
    down, the load failed, and with it the calls of the queues whose primaries serve
    (docs/scaling.md). EVAL goes where the call goes, following MOVED and ASK to the node
    that answered NOSCRIPT, which caches the script as it runs it.
    """
    if isinstance(client, redis.RedisCluster):
        return script_command(call, "EVAL", script.script)
    client.script_load(script.script)
    return script_command(call, "EVALSHA", script.sha)


async def asent_again(client: AsyncClient, script: AsyncScript, call: ScriptCall) -> Command:
    """Async twin of ``sent_again``."""
    if isinstance(client, redis.asyncio.RedisCluster):
        return script_command(call, "EVAL", script.script)
    await client.script_load(script.script)
    return script_command(call, "EVALSHA", script.sha)


def script_command(call: ScriptCall, *how: Any) -> Command:
    """Return the command of ``call`` sent as ``how``: EVALSHA and its digest, or EVAL and
    its source."""
    return (*how, len(call.keys), *call.keys, *call.args)


def _pipelined(client: SyncClient, commands: Sequence[tuple[Command, dict[str, Any]]]) -> list[Any]:
    """Send ``commands`` as one pipeline; return their replies, errors among them."""
    with client.pipeline(transaction=False) as pipe:
        for args, options in commands:
            pipe.execute_command(*args, **options)
        return pipe.execute(raise_on_error=False)


def _executed(client: SyncClient, down: DownNodes, batch: Batch) -> list[Any]:
    """Send ``batch``; return its replies. A cluster round that includes a node ``down``
    remembers, or whose pipeline failed whole, is sent one node's share at a time, each
    share's error its own calls' replies (module docstring)."""
    whole: Exception | None = None
    if not down.spares_any(batch.nodes):
        try:
            return _pipelined(client, batch.commands)
        except REDIS_ERRORS as exc:
            whole = exc
    shares = _apart(client, batch, whole)
    answers = [
        _share_sent(client, down, node, [batch.commands[i] for i in share], whole is not None)
        for node, share in shares
    ]
    return _merged(len(batch.commands), shares, answers, whole)


def _share_sent(
    client: SyncClient,
    down: DownNodes,
    node: str | None,
    commands: Sequence[tuple[Command, dict[str, Any]]],
    look: bool,
) -> tuple[list[Any], Exception | None]:
    """Send ``node``'s share, unless ``down`` spares it; ``look``: PING the node first (a round
    that failed whole). Return the share's replies, and the error that failed it whole."""
    try:
        if (target := _to_look_at(client, down, node, look)) is not None:
            client.ping(target_nodes=target)
        replies = _pipelined(client, commands)
    except REDIS_ERRORS as exc:
        down.failed(node, exc)
        return [exc] * len(commands), exc
    down.answered(node)
    return replies, None


def _to_look_at(
    client: SyncClient | AsyncClient, down: DownNodes, node: str | None, look: bool
) -> Any:
    """Return the node to PING before sending ``node``'s share, or None: ``down`` does not
    remember it and ``look`` is False, or it left the slot map. Raise ``NodeSpared`` while
    ``down`` spares it. redis-py sends a command to a node named as its target once, without
    retries, and reads the slot map again after a refusal (down_nodes.py)."""
    if node is None or not (down.look_first(node) or look):
        return None
    assert isinstance(client, CLUSTERS)  # only a cluster's rounds go share by share
    find: Callable[..., Any] = client.get_node  # untyped in redis-py
    return find(node_name=node)


def _apart(
    client: SyncClient | AsyncClient, batch: Batch, whole: Exception | None
) -> list[tuple[str | None, list[int]]]:
    """Return the shares of ``batch`` to send apart, each with its node, after ``whole``
    failed it (None: a node in it is spared); raise ``whole`` when there is nothing to split:
    one Redis, or a round for one node not spared."""
    shares = batch.shares()
    if whole is not None and (not isinstance(client, CLUSTERS) or len(shares) < 2):
        raise whole
    return shares


def _merged(
    count: int,
    shares: list[tuple[str | None, list[int]]],
    answers: list[tuple[list[Any], Exception | None]],
    whole: Exception | None,
) -> list[Any]:
    """Return the ``count`` replies of a round sent in ``shares``, from each share's answer;
    raise ``whole`` (else the first share's error) when every share failed: no node answered,
    an error of the round trip itself, as before the shares were sent apart."""
    failures = [error for _, error in answers if error is not None]
    if len(failures) == len(answers):
        raise whole or failures[0]
    replies: list[Any] = [None] * count
    for (_, share), (answered, _) in zip(shares, answers, strict=True):
        for position, reply in zip(share, answered, strict=True):
            replies[position] = reply
    return replies


async def asend_each(
    client: AsyncClient,
    scripts: dict[ScriptName, AsyncScript],
    settings: BackendSettings,
    calls: Sequence[ScriptCall],
    *,
    down: DownNodes,
    before: Sequence[Command] = (),
    confirm: bool = False,
) -> tuple[list[Any], list[Any]]:
    """Asyncio twin of ``send_each``."""
    if isinstance(client, redis.asyncio.RedisCluster):
        await client.initialize()  # the node of each key is known only once connected
    sending = Sending(client, scripts, settings, calls, before, confirm)
    unloaded: set[ScriptName] = set()
    while (batch := sending.next_batch()) is not None:
        with sending.round_errors():
            for name in unloaded:
                await client.script_load(scripts[name].script)
            unloaded = sending.take(await _aexecuted(client, down, batch))
    return sending.before_replies, sending.outcomes()


async def _apipelined(
    client: AsyncClient, commands: Sequence[tuple[Command, dict[str, Any]]]
) -> list[Any]:
    """Async twin of ``_pipelined``."""
    async with client.pipeline(transaction=False) as pipe:
        for args, options in commands:
            pipe.execute_command(*args, **options)
        return await pipe.execute(raise_on_error=False)


async def _aexecuted(client: AsyncClient, down: DownNodes, batch: Batch) -> list[Any]:
    """Async twin of ``_executed``."""
    whole: Exception | None = None
    if not down.spares_any(batch.nodes):
        try:
            return await _apipelined(client, batch.commands)
        except REDIS_ERRORS as exc:
            whole = exc
    shares = _apart(client, batch, whole)
    answers = [
        await _ashare_sent(
            client, down, node, [batch.commands[i] for i in share], whole is not None
        )
        for node, share in shares
    ]
    return _merged(len(batch.commands), shares, answers, whole)


async def _ashare_sent(
    client: AsyncClient,
    down: DownNodes,
    node: str | None,
    commands: Sequence[tuple[Command, dict[str, Any]]],
    look: bool,
) -> tuple[list[Any], Exception | None]:
    """Async twin of ``_share_sent``."""
    try:
        if (target := _to_look_at(client, down, node, look)) is not None:
            await client.ping(target_nodes=target)
        replies = await _apipelined(client, commands)
    except REDIS_ERRORS as exc:
        down.failed(node, exc)
        return [exc] * len(commands), exc
    down.answered(node)
    return replies, None
