"""Which Redis server holds the data, and since when the reapers have seen it.

A restart or a failover is an outage a reaper may not have seen: it came between two passes,
or before the reaper started (a ``--once`` from cron). Leases lapsed by the Redis clock
meanwhile, which live workers renew once they reconnect, so a reaper holds off settling them
for a while after the server it reaches changed (docs/lifecycle.md, After an outage or a
stall). The server is told by its INFO ``run_id``, new at every start, and its
``master_replid``, new at every promotion of a replica.

A Redis Cluster's server is its primaries, those that answer: one down with no replica to take
over (``cluster-require-full-coverage no``) is left out, and so are the queue parts it holds
(a sharded queue's shards there, the parts of other shard counts there), which the pass leaves
out; the others are reaped. Leaving it out changes the server, and so does its return: each
starts a hold, so its queues' leases wait for their workers' renewals once it is back. The note
itself lives on the node of ``{alias}``: while that one is down, no pass can read when the
reapers first saw the primaries that answer, and says so (``ServerSeen.unnoted``).
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis

from ..exceptions import BrokerUnavailable
from .connection import wrong_type
from .core import BrokerCore
from .scripts import ScriptCall, ScriptName

# A primary whose INFO meets one of these is down for the pass (refused, timed out, loading).
NODE_DOWN = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSeen:
    """What a reap pass learns of the server holding its queues (``server_seen``)."""

    # How long ago (Redis time) a reaper first saw it, by the reapers' note; None when the note
    # could not be read (``unnoted``).
    ms_ago: int | None
    # The queue parts on a Redis Cluster primary that did not answer, each with that node's
    # error (one error per node): left out of the server, and to be left out of the pass.
    unreached: dict[str, BrokerUnavailable]
    identity: str  # the server: the run_id and master_replid of each primary that answered
    now_ms: int  # the Redis time of the read
    # Why the note could not be read: its Redis Cluster node (``{alias}``'s) did not answer.
    unnoted: BrokerUnavailable | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _NoteRead:
    """The server and the reapers' note as one read found them (``_server_note_and_time``)."""

    identity: str
    note: Any  # None when it is missing, of another type or unread
    now_ms: int
    down: dict[str, Exception]  # the error of each Redis Cluster primary that did not answer
    note_down: Exception | None = None  # the error of the note's node, one of ``down``


class ServerIdentity(BrokerCore):
    """The server identity section of the Broker."""

    def ms_since_server_seen(self) -> int:
        """Return how long ago (ms, Redis time) a reaper first saw the server this backend
        reaches; when none saw another before it (the first pass ever, or a Redis that kept no
        data), about the Redis time itself. Raise when the note's node did not answer."""
        seen = self.server_seen([])
        if seen.unnoted is not None:
            raise seen.unnoted
        assert seen.ms_ago is not None  # read whenever its node answered
        return seen.ms_ago

    def server_seen(self, parts: Sequence[str]) -> ServerSeen:
        """Return how long ago a reaper first saw the server this backend reaches, and which
        of the queue ``parts`` are on a Redis Cluster primary that did not answer (left out of
        it).

        Reads only, in one round trip (a cluster: one per primary, and two), while the
        reapers' note names this server: a pass goes on while Redis holds writes back
        (``CLIENT PAUSE WRITE``, a ``FAILOVER`` under way), as its reap calls did before. A
        note to write, once after a change, takes ``server_seen.lua`` (allowed at maxmemory,
        as the reap calls are).
        """
        with self.translated_errors(read=True):
            read = self._server_note_and_time()
        seen = partial(
            ServerSeen,
            unreached=self.parts_on(
                {node: self.translated(error, read=True) for node, error in read.down.items()},
                parts,
            ),
            identity=read.identity,
            now_ms=read.now_ms,
        )
        if read.note_down is not None:
            return seen(ms_ago=None, unnoted=self.translated(read.note_down, read=True))
        noted_at = _noted_at(read.note, read.identity)
        if noted_at is not None and noted_at <= read.now_ms:  # later: the clock stepped back
            return seen(ms_ago=read.now_ms - noted_at)
        call = ScriptCall(ScriptName.SERVER_SEEN, (self.keyspace.server,), (read.identity,))
        return seen(ms_ago=int(self._run(call)))

    def _server_note_and_time(self) -> _NoteRead:
        """Return the server's identity, the reapers' note, the Redis time (ms) of the note's
        server, and the error of each Redis Cluster primary left out of the identity, by name.
        A cluster whose note's node is one of those is not asked for the note, and gives the
        time of a primary that answered."""
        client, key = self.client, self.keyspace.server
        if not isinstance(client, redis.RedisCluster):  # one Redis: down or not, as a whole
            with client.pipeline(transaction=False) as pipe:
                pipe.info()
                pipe.get(key)
                pipe.time()
                info, note, time = pipe.execute(raise_on_error=False)
            for reply in (info, time, note):
                if isinstance(reply, Exception) and not (reply is note and wrong_type(note)):
                    raise reply
            return _NoteRead(identity=_identity([info]), note=note, now_ms=_ms(time), down={})
        answered, down = _primaries_info(client)
        identity = _identity([info for _, info in answered])
        node_of: Callable[[str], Any] = client.get_node_from_key  # untyped in redis-py
        note_node = node_of(key)
        if note_node.name in down:
            time = client.time(target_nodes=answered[0][0])
            note_down = down[note_node.name]
            return _NoteRead(
                identity=identity, note=None, now_ms=_ms(time), down=down, note_down=note_down
            )
        try:
            note = client.get(key)
        except redis.ResponseError as exc:
            if not wrong_type(exc):
                raise
            note = None
        time = client.time(target_nodes=note_node)
        return _NoteRead(identity=identity, note=note, now_ms=_ms(time), down=down)


def _identity(infos: list[Any]) -> str:
    """Return the server the INFO of each primary that answered names."""
    return ",".join(sorted(f"{i['run_id']}:{i['master_replid']}" for i in infos))


def _ms(time: Any) -> int:
    """Return a TIME reply in ms."""
    return int(time[0]) * 1000 + int(time[1]) // 1000


def _primaries_info(
    client: redis.RedisCluster,
) -> tuple[list[tuple[Any, Any]], dict[str, Exception]]:
    """Return each primary that answered with its INFO, and the error of each that did not,
    by name: one down is left out, its queues skipped and the others' reaped; none answering
    is Redis away, and raises its error. Pairs, not a dict by node: redis-py 6's
    ``ClusterNode`` is unhashable (7 and later hash it by name)."""
    answered: list[tuple[Any, Any]] = []
    down: dict[str, Exception] = {}
    primaries: Callable[[], list[Any]] = client.get_primaries  # untyped in redis-py
    for node in primaries():
        try:
            answered.append((node, client.info(target_nodes=node)))
        except NODE_DOWN as exc:
            down[node.name] = exc
    if not answered:
        raise next(iter(down.values()))
    return answered, down


def _noted_at(note: Any, identity: str) -> int | None:
    """Return when the reapers first saw ``identity`` by ``note`` (``<identity> <ms>``), or
    None when the note names another server, is missing, malformed or of another type."""
    found = re.fullmatch(r"(\S+) (\d+)", note, re.ASCII) if isinstance(note, str) else None
    return int(found[2]) if found and found[1] == identity else None
