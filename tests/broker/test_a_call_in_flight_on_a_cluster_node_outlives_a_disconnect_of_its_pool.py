"""A call in flight on a Redis Cluster node ends with its reply though the node's pool is
disconnected meanwhile; its connection is closed before its next call instead.

redis-py before 7.2 disconnects the whole pool of the node it reads the slot map from, at each
read, which it does after every connection error (a primary down meets one at each call to it).
The connections in use were closed under the calls of the other threads, which broke with a
bare OSError or ValueError ("I/O operation on closed file"): worker threads died, a task's
lease went unrenewed and the task ran twice. redis-py 7.2 and later no longer do it; the test
disconnects the pool as the older ones did.
"""

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_threadmill.broker import Broker
from tests.support import wait_until

# A one-node cluster that owns all 16384 slots, and a plain client of it.
from .test_cluster_slots import redis_client, redis_url

__all__ = ["redis_client", "redis_url"]  # fixtures, for pytest

KEY = "{in-flight}list"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True}


@pytest.fixture
def node_client(broker: Broker) -> Iterator[redis.Redis]:
    """The redis-py client of the node that owns KEY, pooled as the backend pools it."""
    cluster = broker.client
    assert isinstance(cluster, redis.RedisCluster)
    node = cluster.get_node_from_key(KEY)
    assert node is not None
    assert node.redis_connection is not None
    yield node.redis_connection
    node.redis_connection.delete(KEY)


def _blocked_id(redis_client: redis.Redis) -> int | None:
    """Return the CLIENT ID of the connection blocked in BLPOP, or None while there is none."""
    blocked = [c for c in redis_client.client_list() if c["cmd"] == "blpop"]
    return int(blocked[0]["id"]) if blocked else None


def test_a_blocked_call_gets_its_reply_and_its_connection_is_renewed_after(
    node_client: redis.Redis, redis_client: redis.Redis
) -> None:
    replies: list[Any] = []
    call = threading.Thread(target=lambda: replies.append(_blpop(node_client)))
    call.start()
    try:
        wait_until(lambda: _blocked_id(redis_client) is not None, "the BLPOP in flight", 10)
        in_flight = _blocked_id(redis_client)
        node_client.connection_pool.disconnect()  # what redis-py 6 does at a slot map read
        redis_client.rpush(KEY, "reply")
    finally:
        call.join(30)
    assert replies == [[KEY, "reply"]]
    # The same connection, handed out again (the pool is last in, first out), connects afresh.
    assert node_client.client_id() != in_flight
    assert in_flight not in [int(c["id"]) for c in redis_client.client_list()]


def _blpop(client: redis.Redis) -> Any:
    """Return BLPOP's reply on KEY, or the error it met, as text."""
    try:
        reply = client.blpop([KEY], timeout=20)
    except Exception as exc:  # the error is what the test shows
        return repr(exc)
    return [redis.utils.str_if_bytes(part) for part in reply] if reply else reply


def test_a_disconnect_closes_the_idle_connections_at_once(
    node_client: redis.Redis, redis_client: redis.Redis
) -> None:
    """The client's ``close`` disconnects its pools: an idle connection left open there stayed
    open for as long as the pool lived."""
    idle = node_client.client_id()
    assert idle in [int(c["id"]) for c in redis_client.client_list()]

    node_client.connection_pool.disconnect()

    wait_until(
        lambda: idle not in [int(c["id"]) for c in redis_client.client_list()],
        "the idle connection closed",
        10,
    )
