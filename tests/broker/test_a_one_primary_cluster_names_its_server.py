"""A Redis Cluster of one primary (a managed cluster of one shard) names its server to the
reapers, as a cluster of several does (docs/lifecycle.md, After an outage or a stall).

redis-py returns a lone node's INFO as it is, not keyed by node as several nodes' are: read as
the latter, every reap pass raised a TypeError, ``threadmill_reap`` exited with a traceback and
a worker's supervisor died at its first reap pass.
"""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Lease
from tests.support import Command

# A one-node cluster that owns all 16384 slots, and a plain client of it.
from .test_cluster_slots import redis_client, redis_url

__all__ = ["redis_client", "redis_url"]  # fixtures, for pytest

OPTIONS: dict[str, object] = {"cluster": True}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return OPTIONS


def test_the_note_names_the_one_primary(broker: Broker, redis_client: redis.Redis) -> None:
    assert broker.ms_since_server_seen() > 0
    info = redis_client.info()
    assert redis_client.get(broker.keyspace.server) == f"{info['run_id']}:{info['master_replid']} 0"


def test_a_reap_from_cron_settles_an_expired_lease(
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    broker: Broker,
    running: Lease,
    expire_lease: Callable[[str], None],
) -> None:
    """The first pass ever reaches a server no reaper saw another before: it holds nothing."""
    expire_lease(running.task_id)
    command = Command(redis_url, key_prefix, "threadmill_reap", "--once", options=OPTIONS)
    try:
        assert command.wait(60) == 0, command.log
        assert "Traceback" not in command.log, command.log
        assert redis_client.zscore(broker.queue_keys("default").leases, running.task_id) is None
    finally:
        command.close()
