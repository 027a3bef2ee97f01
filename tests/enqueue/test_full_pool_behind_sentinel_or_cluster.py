"""Behind Sentinel or a Redis Cluster, a full connection pool wrote nothing, and says so.

Before, redis-py's Sentinel pool raised "Too many connections" at once, and the asyncio
cluster client's node pool a bare ``MaxConnectionsError()``: both are ConnectionErrors, which
read as a dropped call that may have been applied (``MaybeApplied``, "unreachable ()"), so a
burst past max_connections asked each caller to check whether its task was stored. The
Sentinel pools now wait up to pool_timeout, as one Redis's do (tests/enqueue/test_pool.py).
"""

import asyncio
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.cluster.conftest import skip_without_cluster_support
from tests.conftest import tasks_setting
from tests.servers.redis_cluster import LocalCluster, local_cluster
from tests.servers.redis_sentinel import SERVICE, LocalSentinel, local_sentinel
from tests.support import close_pipelines

LOCATION = "redis://sentinel-managed/0"  # the host is ignored: the sentinels name the primary
BUSY = (
    "Every pooled connection to Redis at redis://sentinel-managed/0 stayed in use for "
    "pool_timeout=0.2s (No connection available.). Raise OPTIONS['pool_timeout'] or "
    "OPTIONS['max_connections'], or find what holds the connections (a slow Redis?); "
    "nothing was written."
)


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    with local_sentinel() as setup:
        yield setup


@pytest.fixture
def redis_url(sentinel_setup: LocalSentinel) -> str:
    return LOCATION


@pytest.fixture
def pool_timeout() -> float:
    return 0.2  # a test that must not give up sets more


@pytest.fixture
def tasks_options(sentinel_setup: LocalSentinel, pool_timeout: float) -> dict[str, object]:
    sentinels = [list(address) for address in sentinel_setup.addresses]
    return {
        "sentinel": {"service_name": SERVICE, "sentinels": sentinels},
        "max_connections": 1,
        "pool_timeout": pool_timeout,
    }


@pytest.fixture
def redis_client(sentinel_setup: LocalSentinel, key_prefix: str) -> Iterator[redis.Redis]:
    """A client on the current primary; afterwards it deletes the test's keys."""
    client = redis.Redis(port=sentinel_setup.current_primary().port, decode_responses=True)
    yield client
    keys = list(client.scan_iter(f"{key_prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.mark.parametrize("pool_timeout", [30.0])
def test_concurrent_thread_reads_wait_for_the_one_connection(
    backend: ThreadmillTaskBackend,
) -> None:
    task_id = echo.enqueue("x").id
    start = threading.Barrier(16)

    def read(_: int) -> list[TaskResultStatus]:
        start.wait()
        return [echo.get_result(task_id).status for _ in range(20)]

    with ThreadPoolExecutor(16, thread_name_prefix="test-pool") as pool:
        statuses = {status for statuses in pool.map(read, range(16)) for status in statuses}
    assert statuses == {TaskResultStatus.READY}


def test_a_sentinel_pool_busy_past_pool_timeout_says_so(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    client = backend.broker.client
    assert isinstance(client, redis.Redis)
    pool = client.connection_pool
    held = pool.get_connection()
    try:
        with pytest.raises(BrokerUnavailable) as raised:
            echo.enqueue("waits, then gives up")
    finally:
        pool.release(held)
    assert not isinstance(raised.value, MaybeApplied)
    assert re.fullmatch(re.escape(BUSY), str(raised.value))
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []
    assert echo.enqueue("the connection is free again").id


def test_a_busy_async_sentinel_pool_says_so(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    def stored() -> set[str]:
        return set(redis_client.scan_iter(f"{key_prefix}:*"))

    async def enqueue_while_held() -> tuple[BaseException, set[str]]:
        await echo.aenqueue("opens the loop's client")
        before = stored()
        client, _ = backend.broker._async_client()
        assert isinstance(client, redis.asyncio.Redis)
        pool = client.connection_pool
        held = await pool.get_connection()
        try:
            with pytest.raises(BrokerUnavailable) as raised:
                await echo.aenqueue("waits, then gives up")
        finally:
            await pool.release(held)
        return raised.value, before

    error, before = asyncio.run(enqueue_while_held())
    assert not isinstance(error, MaybeApplied)
    assert re.fullmatch(re.escape(BUSY), str(error))
    assert stored() == before


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    skip_without_cluster_support()
    with local_cluster() as created:
        yield created


@pytest.fixture
def cluster_backend(cluster: LocalCluster, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """The backend on ``cluster`` with one connection per node and event loop."""
    tasks = tasks_setting(cluster.url, key_prefix, cluster=True, max_connections=1)
    with override_settings(TASKS=tasks):
        found = task_backends["default"]
        assert isinstance(found, ThreadmillTaskBackend)
        yield found
    close_pipelines(key_prefix)


def test_a_full_async_cluster_pool_wrote_nothing_and_says_so(
    cluster: LocalCluster, cluster_backend: ThreadmillTaskBackend, key_prefix: str
) -> None:
    """redis-py's asyncio cluster client has no blocking pool: the call fails at once."""
    reader = redis.RedisCluster.from_url(cluster.url, decode_responses=True)

    def stored() -> set[str]:
        return set(reader.scan_iter(f"{key_prefix}:*"))

    async def enqueue_while_held() -> tuple[BaseException, set[str]]:
        await echo.aenqueue("opens the loop's client")
        before = stored()
        client, _ = cluster_backend.broker._async_client()
        assert isinstance(client, redis.asyncio.RedisCluster)
        held = [(node, node.acquire_connection()) for node in client.get_nodes()]
        try:
            with pytest.raises(BrokerUnavailable) as raised:
                await echo.aenqueue("finds no free connection")
        finally:
            for node, connection in held:
                node.release(connection)
        return raised.value, before

    try:
        error, before = asyncio.run(enqueue_while_held())
        assert stored() == before
        for key in before:
            reader.delete(key)
    finally:
        reader.close()
    assert not isinstance(error, MaybeApplied)
    assert str(error) == (
        f"Every pooled connection to Redis at {cluster.url} is in use, and redis-py's asyncio "
        "Redis Cluster client does not wait for one (MaxConnectionsError). Raise "
        "OPTIONS['max_connections'] (per node and event loop), or find what holds the "
        "connections (a slow Redis?); nothing was written."
    )
