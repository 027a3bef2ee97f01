"""A Redis that answers but cannot take the call now: loading its data, or at maxclients.

Both once read "unreachable … the call may have been applied": wrong on both counts.
"""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.connection import translated_errors
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process


def test_a_loading_redis_is_named_as_loading() -> None:
    with (
        pytest.raises(BrokerUnavailable) as raised,
        translated_errors("redis://:secret@127.0.0.1:6379/0", 10),
    ):
        raise redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory")
    assert str(raised.value) == (
        "Redis at redis://:***@127.0.0.1:6379/0 is loading its data from disk (Redis is loading "
        "the dataset in memory): it answers again once loaded, which takes longer the larger "
        "the data; nothing was written."
    )


@pytest.fixture(scope="module")
def one_client_redis() -> Iterator[RedisProcess]:
    with redis_process("--maxclients", "1") as server:
        yield server


@pytest.fixture
def redis_url(one_client_redis: RedisProcess) -> str:
    return one_client_redis.url


def test_a_redis_at_maxclients_is_named_with_the_fix(
    backend: ThreadmillTaskBackend, one_client_redis: RedisProcess
) -> None:
    hog = redis.Redis.from_url(one_client_redis.url)
    hog.ping()  # the one client Redis allows
    try:
        with pytest.raises(BrokerUnavailable, match=r"has as many clients as its maxclients"):
            echo.enqueue(1)
    finally:
        hog.close()


def test_a_request_past_the_servers_limits_is_named_with_the_fix() -> None:
    """Redis replies so to an argument past proto-max-bulk-len, then closes the connection
    (read here only when the reply comes before the client's write fails: raised by hand)."""
    with (
        pytest.raises(BrokerUnavailable) as raised,
        translated_errors("redis://127.0.0.1:6379/0", 10),
    ):
        raise redis.ResponseError("Protocol error: invalid bulk length")
    assert str(raised.value).startswith(
        "Redis at redis://127.0.0.1:6379/0 refused a request as too large (Protocol error: "
        "invalid bulk length): an argument past its proto-max-bulk-len, or a request past its "
        "client-query-buffer-limit. Raise them in redis.conf, or lower "
        "OPTIONS['max_payload_bytes'] for an enqueue, OPTIONS['max_result_bytes'] for a "
        "worker's finish call (threadmill.W006)"
    )
