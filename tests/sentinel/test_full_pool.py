"""Behind Sentinel, a call finding every pooled connection in use waits up to pool_timeout, as
on one Redis (tests/enqueue/test_pool.py), then says it wrote nothing.

redis-py's own Sentinel pool raised "Too many connections" at once: a ConnectionError, which
read as a dropped call that may have been applied (``MaybeApplied``), so a burst past
max_connections asked each caller whether its task was stored.
"""

import asyncio
import re

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import SERVICE, LocalSentinel
from tests.support import read_at_once

from .conftest import LOCATION

BUSY = (
    f"Every pooled connection to Redis at {LOCATION} stayed in use for pool_timeout=0.2s (No "
    "connection available.). Raise OPTIONS['pool_timeout'] or OPTIONS['max_connections'], or "
    "find what holds the connections (a slow Redis?); nothing was written."
)


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


@pytest.mark.parametrize("pool_timeout", [30.0])
def test_concurrent_thread_reads_wait_for_the_one_connection(
    backend: ThreadmillTaskBackend,
) -> None:
    task_id = echo.enqueue("x").id
    assert read_at_once(lambda: echo.get_result(task_id).status) == {TaskResultStatus.READY}


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
