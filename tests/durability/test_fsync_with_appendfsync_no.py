"""durability='fsync' on a Redis 7.2+ whose AOF is on but never fsynced: appendfsync no.

WAITAOF then never counts the primary's AOF (the kernel writes it back when it likes): every
enqueue stored its task, waited durability_timeout and raised MaybeApplied telling to check
that a replica is connected or to raise the timeout, neither of which helps; and the checks
passed it, the AOF being on.
"""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"durability": "fsync", "durability_timeout": 0.2}


@pytest.fixture
def redis_url(waitaof_server: RedisProcess) -> Iterator[str]:
    """The module's WAITAOF server with appendfsync no for this test, and always after it."""
    client = redis.Redis.from_url(waitaof_server.url)
    client.config_set("appendfsync", "no")
    try:
        yield waitaof_server.url
    finally:
        client.config_set("appendfsync", "always")
        client.close()


def test_the_checks_refuse_an_aof_that_is_never_fsynced(backend: ThreadmillTaskBackend) -> None:
    [error] = [m for m in check_redis(backend) if m.id == "threadmill.E006"]
    assert "durability='fsync' needs the AOF fsynced, and appendfsync is 'no'" in error.msg
    assert "appendfsync everysec" in str(error.hint)


def test_enqueue_names_appendfsync_not_a_replica(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(MaybeApplied) as raised:
        echo.enqueue("unconfirmed")
    said = str(raised.value)
    assert "it was not fsynced to the primary's AOF within 0.2s" in said
    assert "replica" not in said, said
    assert "appendfsync is everysec or always ('no' never confirms one)" in said, said
