"""A LOCATION that names a read-only replica, or a database the server does not have, is named
with the fix: by the system check, by enqueue, and by the worker (never redis-py's bare reply)."""

from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process


@pytest.fixture(scope="module")
def replica() -> Iterator[RedisProcess]:
    """A read-only replica of a throwaway primary."""
    with (
        redis_process() as primary,
        redis_process("--replicaof", "127.0.0.1", str(primary.port)) as copy,
    ):
        yield copy


def backend_at(url: str, key_prefix: str) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default", {"LOCATION": url, "OPTIONS": {"key_prefix": key_prefix}}
    )


def test_a_replica_is_a_check_error_naming_the_primary(
    replica: RedisProcess, key_prefix: str
) -> None:
    [error] = [m for m in check_redis(backend_at(replica.url, key_prefix)) if m.level >= 40]
    assert error.id == "threadmill.E013"
    assert "Redis is a read-only replica of 127.0.0.1:" in error.msg
    assert error.hint.startswith("Point LOCATION at the primary")


def test_an_enqueue_to_a_replica_says_so(replica: RedisProcess, key_prefix: str) -> None:
    with pytest.raises(BrokerUnavailable, match=r"is a read-only replica \(.*point LOCATION at"):
        backend_at(replica.url, key_prefix).enqueue(echo, [1], {})


def test_a_database_the_server_does_not_have_is_refused_with_the_fix(
    replica: RedisProcess, key_prefix: str
) -> None:
    url = f"redis://127.0.0.1:{replica.port}/99"  # any server: it has 16 databases
    with pytest.raises(BrokerRefused, match=r"has no such database \(DB index is out of range\)"):
        backend_at(url, key_prefix).enqueue(echo, [1], {})
