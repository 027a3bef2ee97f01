"""On a Redis Cluster, an asyncio call finding a node's pool full fails at once (redis-py's
asyncio cluster client has no blocking pool), and says it wrote nothing: its bare
``MaxConnectionsError()`` read as a dropped call that may have been applied ("unreachable ()")."""

import asyncio

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.servers.redis_cluster import LocalCluster


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "max_connections": 1}  # one connection per node and event loop


def test_a_full_async_cluster_pool_wrote_nothing_and_says_so(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_client: redis.RedisCluster,
    key_prefix: str,
) -> None:
    def stored() -> set[str]:
        return set(redis_client.scan_iter(f"{key_prefix}:*"))

    async def enqueue_while_held() -> tuple[BaseException, set[str]]:
        await echo.aenqueue("opens the loop's client")
        before = stored()
        client, _ = backend.broker._async_client()
        assert isinstance(client, redis.asyncio.RedisCluster)
        held = [(node, node.acquire_connection()) for node in client.get_nodes()]
        try:
            with pytest.raises(BrokerUnavailable) as raised:
                await echo.aenqueue("finds no free connection")
        finally:
            for node, connection in held:
                node.release(connection)
        return raised.value, before

    error, before = asyncio.run(enqueue_while_held())
    assert stored() == before
    assert not isinstance(error, MaybeApplied)
    assert str(error) == (
        f"Every pooled connection to Redis at {cluster.url} is in use, and redis-py's asyncio "
        "Redis Cluster client does not wait for one (MaxConnectionsError). Raise "
        "OPTIONS['max_connections'] (per node and event loop), or find what holds the "
        "connections (a slow Redis?); nothing was written."
    )
