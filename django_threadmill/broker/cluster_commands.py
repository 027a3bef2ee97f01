"""Read a Redis Cluster's command table from whichever of its nodes answers.

redis-py's asyncio cluster client reads the table (COMMAND: where each command keeps its keys)
as it first connects, from its default node alone: the primary listed first in the slot map,
the one of slot 0. While that primary was down with no replica to take over (under
``cluster-require-full-coverage no``), every new asyncio client failed to start, so each
``aenqueue`` on a new event loop was refused though its queue's primary served it; redis-py 6
reads the table again at each refresh of the slot map, so there a client that met the down node
once failed every call after. Every node holds the same table, so the next node that answers is
asked instead. The sync client needs none of this: its COMMAND goes through its retries, which
pick another default node.
"""

import redis.asyncio
from redis._parsers import AsyncCommandsParser
from redis.asyncio.cluster import ClusterNode, NodesManager
from redis.exceptions import AuthenticationError


class AnyNodeCommandsParser(AsyncCommandsParser):
    """redis-py's command table of an asyncio cluster client, read from the node it is given,
    else from the first other node of the cluster that answers."""

    def __init__(self, nodes: NodesManager) -> None:
        super().__init__()
        self._nodes = nodes

    async def initialize(self, node: ClusterNode | None = None) -> None:
        """Read the table from ``node`` (the client's default node; None: the last one asked),
        or from the next node that answers; if none does, raise ``node``'s error."""
        first = node or self.node
        unreached: Exception | None = None
        others = [other for other in self._nodes.nodes_cache.values() if other is not first]
        for candidate in [first, *others]:
            try:
                await super().initialize(candidate)
                return
            except AuthenticationError:
                raise  # refused: every node checks the same credentials
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                unreached = unreached or exc
        assert unreached is not None  # the loop returned unless a node failed
        raise unreached


def reading_commands_from_any_node(
    client: redis.asyncio.RedisCluster,
) -> redis.asyncio.RedisCluster:
    """Return ``client``, made to read its command table from any node that answers."""
    client.commands_parser = AnyNodeCommandsParser(client.nodes_manager)
    return client
