"""A sharded queue is paused and resumed in every shard, and its idle workers are woken."""

import redis

from django_threadmill.broker import Broker
from django_threadmill.broker.inspect import Inspector

from .conftest import SHARDS, tasks_per_shard


def test_pause_stops_every_shard_and_resume_lets_every_shard_go(
    broker: Broker, redis_client: redis.Redis
) -> None:
    placed = tasks_per_shard(2)
    broker.enqueue("default", [task for tasks in placed.values() for task in tasks])
    parts = broker.parts("default")
    assert len(parts) == SHARDS

    assert broker.pause("default", "test") is True
    assert all(redis_client.exists(broker.queue_keys(part).paused) for part in parts)
    for count in (1, SHARDS, 100):  # some shards asked, others only peeked at: all paused
        acquired = broker.acquire("default", count)
        assert acquired.reservations == []
        assert acquired.next_due_ms is None
        assert acquired.held_back is False
    assert list(Inspector(broker).paused(["default"])) == ["default"]

    for part in parts:
        redis_client.delete(broker.queue_keys(part).wake)
    assert broker.resume("default", "test") is True
    assert not any(redis_client.exists(broker.queue_keys(part).paused) for part in parts)
    assert [redis_client.llen(broker.queue_keys(part).wake) for part in parts] == [2] * SHARDS
    assert len(broker.acquire("default", 100).reservations) == 2 * SHARDS


def test_a_queue_paused_in_one_shard_only_reads_paused_and_pauses_whole_again(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """A pause cut short (a node lost mid-call on a Redis Cluster) leaves some shards paused."""
    first, *others = broker.parts("default")
    redis_client.set(broker.queue_keys(first).paused, "1 test: cut short")
    assert list(Inspector(broker).paused(["default"])) == ["default"]

    assert broker.pause("default", "test") is True  # the other shards were not paused yet
    assert all(redis_client.exists(broker.queue_keys(part).paused) for part in others)
    assert redis_client.get(broker.queue_keys(first).paused) == "1 test: cut short"
    assert broker.pause("default", "test") is False
