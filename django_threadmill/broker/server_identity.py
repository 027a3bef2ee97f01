"""Which Redis server holds the data, and since when the reapers have seen it.

A restart or a failover is an outage a reaper may not have seen: it came between two passes,
or before the reaper started (a ``--once`` from cron). Leases lapsed by the Redis clock
meanwhile, which live workers renew once they reconnect, so a reaper holds off settling them
for a while after the server it reaches changed (docs/lifecycle.md, After an outage or a
stall). The server is told by its INFO ``run_id``, new at every start, and its
``master_replid``, new at every promotion of a replica.
"""

import re
from collections.abc import Callable
from typing import Any

import redis

from .connection import wrong_type
from .core import BrokerCore
from .scripts import ScriptCall, ScriptName


class ServerIdentity(BrokerCore):
    """The server identity section of the Broker."""

    def ms_since_server_seen(self) -> int:
        """Return how long ago (ms, Redis time) a reaper first saw the server this backend
        reaches; when none saw another before it (the first pass ever, or a Redis that kept no
        data), about the Redis time itself.

        Reads only, in one round trip (a cluster: three), while the reapers' note names this
        server: a pass goes on while Redis holds writes back (``CLIENT PAUSE WRITE``, a
        ``FAILOVER`` under way), as its reap calls did before. A note to write, once after a
        change, takes ``server_seen.lua`` (allowed at maxmemory, as the reap calls are).
        """
        with self.translated_errors(read=True):
            identity, note, now_ms = self._server_note_and_time()
        noted_at = _noted_at(note, identity)
        if noted_at is not None and noted_at <= now_ms:  # later: the Redis clock stepped back
            return now_ms - noted_at
        call = ScriptCall(ScriptName.SERVER_SEEN, (self.keyspace.server,), (identity,))
        return int(self._run(call))

    def _server_note_and_time(self) -> tuple[str, Any, int]:
        """Return the server's identity, the reapers' note (None when it is of another type)
        and the Redis time (ms) of the note's server."""
        client, key = self.client, self.keyspace.server
        if isinstance(client, redis.RedisCluster):
            replies = client.info(target_nodes=redis.RedisCluster.PRIMARIES)
            # redis-py keys several nodes' replies by node, but gives a lone node's as it is
            # (a cluster of one primary, a managed cluster of one shard).
            infos = [replies] if "run_id" in replies else list(replies.values())
            try:
                note = client.get(key)
            except redis.ResponseError as exc:
                if not wrong_type(exc):
                    raise
                note = None
            node_of: Callable[[str], Any] = client.get_node_from_key  # untyped in redis-py
            time = client.time(target_nodes=node_of(key))
        else:
            with client.pipeline(transaction=False) as pipe:
                pipe.info()
                pipe.get(key)
                pipe.time()
                info, note, time = pipe.execute(raise_on_error=False)
            for reply in (info, time, note):
                if isinstance(reply, Exception) and not (reply is note and wrong_type(note)):
                    raise reply
            infos = [info]
        identity = ",".join(sorted(f"{i['run_id']}:{i['master_replid']}" for i in infos))
        return identity, note, int(time[0]) * 1000 + int(time[1]) // 1000


def _noted_at(note: Any, identity: str) -> int | None:
    """Return when the reapers first saw ``identity`` by ``note`` (``<identity> <ms>``), or
    None when the note names another server, is missing, malformed or of another type."""
    found = re.fullmatch(r"(\S+) (\d+)", note, re.ASCII) if isinstance(note, str) else None
    return int(found[2]) if found and found[1] == identity else None
