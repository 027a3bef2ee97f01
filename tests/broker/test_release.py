"""release.lua: reserved, never-started tasks go back to ready in their original place."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease, NewTask
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, new_task, start


def test_released_tasks_regain_their_place(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    tasks = [new_task(priority=p) for p in (5, 5, 0)]
    broker.enqueue("default", tasks)
    scores = dict(redis_client.zrange(keys.ready, 0, -1, withscores=True))
    leases = [r.lease for r in broker.acquire("default", 2).reservations]
    broker.enqueue("default", [new_task(priority=5)])
    assert broker.release(leases) == 2
    for task in tasks[:2]:
        assert redis_client.zscore(keys.ready, task.id) == scores[task.id]
    assert [r.lease.task_id for r in broker.acquire("default", 2).reservations] == [
        tasks[0].id,
        tasks[1].id,
    ]


def test_release_clears_the_lease_and_state(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    redis_client.delete(keys.wake)
    assert broker.release([lease]) == 1
    assert redis_client.hget(keys.record(lease.task_id), "state") == "ready"
    assert redis_client.zcard(keys.leases) == 0
    assert redis_client.llen(keys.wake) == 1


def test_started_task_is_not_released(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.start(WORKER, [start(lease)])
    redis_client.delete(keys.wake)
    assert broker.release([lease]) == 0
    assert redis_client.hget(keys.record(lease.task_id), "state") == "running"
    assert redis_client.zcard(keys.ready) == 0
    assert redis_client.llen(keys.wake) == 0


def test_wrong_token_or_missing_task_is_not_released(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    missing = Lease(task_id="e" * 32 + "@default", queue="default", token="1")
    assert broker.release([lease._replace(token="stale"), missing]) == 0
    assert redis_client.hget(keys.record(lease.task_id), "state") == "reserved"
    assert redis_client.zcard(keys.ready) == 0


def test_release_spans_queues(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    enqueue("default")
    enqueue("emails")
    leases = [
        *(r.lease for r in broker.acquire("default", 1).reservations),
        *(r.lease for r in broker.acquire("emails", 1).reservations),
    ]
    assert broker.release(leases) == 2
    assert len(broker.acquire("emails", 5).reservations) == 1


def test_nothing_to_release_sends_nothing(broker: Broker) -> None:
    assert broker.release([]) == 0
