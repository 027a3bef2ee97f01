"""Which Redis server holds the data, and since when the reapers have seen it.

A restart or a failover is an outage a reaper may not have seen: it came between two passes,
or before the reaper started (a ``--once`` from cron). Leases lapsed by the Redis clock
meanwhile, which live workers renew once they reconnect, so a reaper holds off settling them
for a while after the server it reaches changed (docs/lifecycle.md, After an outage or a
stall). The server is told by its INFO ``run_id``, new at every start and on every promotion.
"""

import redis

from .core import BrokerCore
from .scripts import ScriptCall, ScriptName


class ServerIdentity(BrokerCore):
    """The server identity section of the Broker."""

    def ms_since_server_seen(self) -> int:
        """Return how long ago (ms, Redis time) a reaper first saw the server this backend
        reaches; when none saw another before it (the first pass ever, or a Redis that kept no
        data), about the Redis time itself. Two round trips: INFO, then ``server_seen.lua``.
        """
        with self.translated_errors(read=True):
            identity = self._server_identity()
        call = ScriptCall(ScriptName.SERVER_SEEN, (self.keyspace.server,), (identity,))
        return int(self._run(call))

    def _server_identity(self) -> str:
        """Return the server's ``run_id``, or a cluster's primaries' sorted and joined: a
        restart or failover of any of them counts, since any may hold a queue."""
        client = self.client
        if isinstance(client, redis.RedisCluster):
            replies = client.info("server", target_nodes=redis.RedisCluster.PRIMARIES)
            return ",".join(sorted(str(info["run_id"]) for info in replies.values()))
        return str(client.info("server")["run_id"])
