"""A Redis Cluster's server is named from its primaries' INFO under redis-py 6, whose
``ClusterNode`` cannot be hashed (redis-py 7 and later hash it by name).

The INFO of each primary was kept in a dict keyed by its node: under redis-py 6 every reap pass
on a Redis Cluster raised "TypeError: unhashable type: 'ClusterNode'", ``threadmill_reap``
exited with a traceback and a worker's supervisor died at its first reap pass.
"""

import pytest
import redis
import redis.cluster

from django_threadmill.broker import Broker

# A one-node cluster that owns all 16384 slots, and a plain client of it.
from .test_cluster_slots import redis_client, redis_url

__all__ = ["redis_client", "redis_url"]  # fixtures, for pytest


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True}


def test_the_note_names_the_primary_whose_node_cannot_be_hashed(
    broker: Broker, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis.cluster.ClusterNode, "__hash__", None)  # as in redis-py 6
    seen = broker.server_seen(["default"])
    info = redis_client.info()
    assert seen.identity == f"{info['run_id']}:{info['master_replid']}"
    assert seen.unreached == {}
