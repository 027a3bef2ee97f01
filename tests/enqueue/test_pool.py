"""A full connection pool makes a call wait (up to pool_timeout), never fail at once."""

import asyncio
import re

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.support import read_at_once

ONE_CONNECTION = pytest.mark.parametrize("tasks_options", [{"max_connections": 1}])


@ONE_CONNECTION
def test_concurrent_async_reads_wait_for_the_one_connection(
    backend: ThreadmillTaskBackend,
) -> None:
    task_id = echo.enqueue("x").id

    async def read_all() -> list[object]:
        return await asyncio.gather(*(backend.aget_result(task_id) for _ in range(50)))

    assert {r.status for r in asyncio.run(read_all())} == {TaskResultStatus.READY}


@ONE_CONNECTION
def test_concurrent_thread_reads_wait_for_the_one_connection(
    backend: ThreadmillTaskBackend,
) -> None:
    task_id = echo.enqueue("x").id
    statuses = read_at_once(lambda: backend.get_result(task_id).status)
    assert statuses == {TaskResultStatus.READY}


@pytest.mark.parametrize("tasks_options", [{"max_connections": 1, "pool_timeout": 0.2}])
def test_a_pool_busy_past_pool_timeout_says_so(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    pool = backend.broker.client.connection_pool
    held = pool.get_connection()
    try:
        with pytest.raises(BrokerUnavailable) as raised:
            echo.enqueue("waits, then gives up")
    finally:
        pool.release(held)
    message = (
        "Every pooled connection to Redis at {url} stayed in use for pool_timeout=0.2s "
        "(No connection available.). Raise OPTIONS['pool_timeout'] or "
        "OPTIONS['max_connections'], or find what holds the connections (a slow Redis?); "
        "nothing was written."
    )
    assert re.fullmatch(re.escape(message).replace(r"\{url\}", ".+"), str(raised.value))
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []
