"""A connection the server closed while idle (its ``timeout`` setting) is replaced, in aenqueue
as in enqueue: the asyncio pool hands it out as it is, and the call once failed on it."""

import asyncio
from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until


@pytest.fixture(scope="module")
def closing_idle_redis() -> Iterator[RedisProcess]:
    with redis_process("--timeout", "1") as server:  # closes a connection idle for a second
        yield server


@pytest.fixture
def redis_url(closing_idle_redis: RedisProcess) -> str:
    return closing_idle_redis.url


def test_aenqueue_on_a_connection_closed_while_idle_is_retried_on_a_fresh_one(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    async def enqueue_twice() -> None:
        await echo.aenqueue(1)
        # Only the asking connection is left: the server closed the enqueue's, idle.
        wait_until(lambda: len(redis_client.client_list()) == 1, "the server closing it", 15)
        await echo.aenqueue(2)

    asyncio.run(enqueue_twice())
