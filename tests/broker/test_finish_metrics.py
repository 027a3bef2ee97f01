"""finish.lua adds each batch's metrics once per field; stale items are never counted."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Ack, Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.metrics import MAX_TASK_PATHS, current_minute

from .conftest import WORKER, finish

ECHO = "testproject.example.tasks.echo"  # the path conftest.new_task stores
ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def metrics(client: redis.Redis, keys: QueueKeys) -> dict[str, int]:
    return {field: int(value) for field, value in client.hgetall(keys.metrics).items()}


def test_a_batch_adds_outcomes_and_buckets_per_task_path(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    leases = [reserve() for _ in range(3)]
    assert all(lease.task_path == ECHO for lease in leases)
    assert all(lease.waited_ms is not None for lease in leases)
    quick = [finish(lease)._replace(started_ms=1000, finished_ms=1003) for lease in leases[:2]]
    slow = finish(leases[2], Outcome.FAILED, ERROR)._replace(started_ms=1000, finished_ms=3000)
    assert broker.finish(WORKER, [*quick, slow]) == []

    counted = metrics(redis_client, keys)
    assert counted[f"{ECHO}|successful"] == 2
    assert counted[f"{ECHO}|failed"] == 1
    assert counted[f"{ECHO}|run:0"] == 2  # <= 5 ms
    assert counted[f"{ECHO}|run:8"] == 1  # <= 2.5 s
    assert counted[f"{ECHO}|run_ms"] == 3 + 3 + 2000
    minute = redis_client.hgetall(keys.metrics_minute(current_minute()))
    assert minute == {  # what the admin's last hour shows, no more
        f"{ECHO}|successful": "2",
        f"{ECHO}|failed": "1",
        f"{ECHO}|run:0": "2",
        f"{ECHO}|run:8": "1",
    }
    assert counted[f"{ECHO}|wait_ms"] >= 0
    assert 0 < redis_client.pttl(keys.metrics_minute(current_minute())) <= 2 * 3600 * 1000
    assert redis_client.smembers(keys.metrics_paths) == {ECHO}


def test_a_late_ack_is_not_counted_but_its_batch_mates_are(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    first, second = reserve(), reserve()
    assert broker.finish(WORKER, [finish(first)]) == []
    stale = broker.finish(WORKER, [finish(first), finish(second)])
    assert [(r.item.lease, r.ack) for r in stale] == [(first, Ack.ALREADY)]
    assert metrics(redis_client, keys)[f"{ECHO}|successful"] == 2


def test_paths_past_the_cap_count_as_other(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.sadd(keys.metrics_paths, *(f"app.tasks.t{n}" for n in range(MAX_TASK_PATHS)))
    assert broker.finish(WORKER, [finish(reserve())]) == []
    assert metrics(redis_client, keys)["other|successful"] == 1
    assert redis_client.scard(keys.metrics_paths) == MAX_TASK_PATHS


def test_the_reaper_counts_expired_leases_without_run_times(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    redis_client.zadd(keys.leases, {lease.task_id: 1}, xx=True)
    assert broker.finish("", [finish(lease, Outcome.FAILED, ERROR)]) == []
    assert metrics(redis_client, keys) == {f"{ECHO}|failed": 1, f"{ECHO}|expired": 1}
