"""A pause is a key: a Redis with AOF killed and restarted still has the queue paused."""

from collections.abc import Callable

import pytest

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.inspect import Inspector
from tests.servers.redis_server import RedisProcess


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which the test kills and restarts."""
    return durable_redis.url


def test_a_pause_survives_a_redis_restart(
    broker: Broker, durable_redis: RedisProcess, enqueue: Callable[..., NewTask]
) -> None:
    task = enqueue()
    broker.pause("default", "ada in the admin", "before the restart")

    durable_redis.kill()
    durable_redis.start()

    after = Broker(broker.settings)  # the old one's pooled connections died with the server
    assert Inspector(after).paused(["default"])["default"].reason == "before the restart"
    assert after.acquire("default", 5).reservations == []
    assert after.resume("default", "test") is True
    assert [r.lease.task_id for r in after.acquire("default", 5).reservations] == [task.id]
