"""Read a Redis Cluster's command table from whichever of its nodes answers, and a script
call's keys from the call.

redis-py's asyncio cluster client reads the table (COMMAND: where each command keeps its keys)
as it first connects, from its default node alone: the primary listed first in the slot map,
the one of slot 0. While that primary was down with no replica to take over (under
``cluster-require-full-coverage no``), every new asyncio client failed to start, so each
``aenqueue`` on a new event loop was refused though its queue's primary served it; redis-py 6
reads the table again at each refresh of the slot map, so there a client that met the down node
once failed every call after. Every node holds the same table, so the next node that answers is
asked instead. The sync client needs none of this: its COMMAND goes through its retries, which
pick another default node.

The sync client of redis-py 7 also asked its default node where the keys of each ``EVALSHA``
in a pipeline are (``COMMAND GETKEYS``, a round trip per script call), though a script call
names its keys itself: every batch cost a round trip more, and failed whole while that node was
down. ``ScriptKeysTable`` reads them from the call (redis-py 6 and 8 ask nothing).
"""

from collections.abc import Callable
from typing import Any, cast

import redis
import redis.asyncio
from redis._parsers import AsyncCommandsParser, CommandsParser
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


class ScriptKeysTable:
    """A sync cluster client's command table (redis-py's ``CommandsParser``) that reads the
    keys of ``EVAL`` and ``EVALSHA`` from the call, which names them after its ``numkeys``
    (module docstring); everything else as the table it wraps does."""

    def __init__(self, table: CommandsParser) -> None:
        self._table = table

    def get_keys(self, redis_conn: Any, *args: Any) -> Any:
        if len(args) > 2 and str(args[0]).upper() in ("EVAL", "EVALSHA"):
            return list(args[3 : 3 + int(args[2])])
        asked: Callable[..., Any] = self._table.get_keys  # untyped in redis-py
        return asked(redis_conn, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def script_keys_read_from_the_call(client: redis.RedisCluster) -> redis.RedisCluster:
    """Return ``client``, made to read where a script call's keys are from the call itself:
    its pipelines share its table."""
    client.commands_parser = cast(CommandsParser, ScriptKeysTable(client.commands_parser))
    return client
