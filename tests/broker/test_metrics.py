"""Metrics of recorded outcomes are tallied, then sent by metrics.lua once per field and part.

A finish call records outcomes only; ``send_metrics`` (the ack writer's clock, the reaper's
pass) adds their counters. Stale items are never counted; the minute is Redis's.
"""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.metrics import MAX_TASK_PATHS

from .conftest import WORKER, finish, redis_now_ms

ECHO = "testproject.example.tasks.echo"  # the path conftest.new_task stores
ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def metrics(client: redis.Redis, keys: QueueKeys) -> dict[str, int]:
    return {field: int(value) for field, value in client.hgetall(keys.metrics).items()}


def redis_minute(client: redis.Redis) -> int:
    seconds, _ = client.time()
    return int(seconds) // 60


def test_a_batch_adds_outcomes_and_buckets_per_task_path(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    leases = [reserve() for _ in range(3)]
    assert all(lease.task_path == ECHO for lease in leases)
    assert all(lease.waited_ms is not None for lease in leases)
    quick = [finish(lease)._replace(started_ms=1000, finished_ms=1003) for lease in leases[:2]]
    slow = finish(leases[2], Outcome.FAILED, ERROR)._replace(started_ms=1000, finished_ms=3000)
    assert broker.finish(WORKER, [*quick, slow]) == []
    assert metrics(redis_client, keys) == {}  # not yet: sent on the caller's clock
    broker.send_metrics()

    counted = metrics(redis_client, keys)
    assert counted[f"{ECHO}|successful"] == 2
    assert counted[f"{ECHO}|failed"] == 1
    assert counted[f"{ECHO}|run:0"] == 2  # <= 5 ms
    assert counted[f"{ECHO}|run:8"] == 1  # <= 2.5 s
    assert counted[f"{ECHO}|run_ms"] == 3 + 3 + 2000
    minute = redis_client.hgetall(keys.metrics_minute(redis_minute(redis_client)))
    assert minute == {  # what the admin's last hour shows, no more
        f"{ECHO}|successful": "2",
        f"{ECHO}|failed": "1",
        f"{ECHO}|run:0": "2",
        f"{ECHO}|run:8": "1",
    }
    assert counted[f"{ECHO}|wait_ms"] >= 0
    assert 0 < redis_client.pttl(keys.metrics_minute(redis_minute(redis_client))) <= 7_200_000
    assert redis_client.hgetall(keys.stats) == {"successful": "2", "failed": "1"}
    assert redis_client.zrange(keys.metrics_paths, 0, -1) == [ECHO]


def test_a_late_ack_is_not_counted_but_its_batch_mates_are(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    first, second = reserve(), reserve()
    assert broker.finish(WORKER, [finish(first)]) == []
    stale = broker.finish(WORKER, [finish(first), finish(second)])
    assert [(r.item.lease, r.ack) for r in stale] == [(first, Ack.ALREADY)]
    broker.send_metrics()
    assert metrics(redis_client, keys)[f"{ECHO}|successful"] == 2


def test_paths_past_the_cap_count_as_other(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    seconds, micros = redis_client.time()  # seen just now: none is forgotten
    seen_ms = seconds * 1000 + micros // 1000
    redis_client.zadd(
        keys.metrics_paths, {f"app.tasks.t{n}": seen_ms for n in range(MAX_TASK_PATHS)}
    )
    assert broker.finish(WORKER, [finish(reserve())]) == []
    broker.send_metrics()
    assert metrics(redis_client, keys)["other|successful"] == 1
    assert redis_client.zcard(keys.metrics_paths) == MAX_TASK_PATHS


def test_the_reaper_counts_expired_leases_without_run_times(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    redis_client.zadd(keys.leases, {lease.task_id: 1}, xx=True)
    assert broker.finish("", [finish(lease, Outcome.FAILED, ERROR)]) == []
    broker.send_metrics()
    assert metrics(redis_client, keys) == {f"{ECHO}|failed": 1, f"{ECHO}|expired": 1}


def test_many_results_are_sent_in_one_call_per_part(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    for lease in [reserve() for _ in range(5)]:
        assert broker.finish(WORKER, [finish(lease)]) == []  # five lone results
    redis_client.config_resetstat()
    broker.send_metrics()
    calls = redis_client.info("commandstats")
    assert calls["cmdstat_evalsha"]["calls"] == 1
    assert metrics(redis_client, keys)[f"{ECHO}|successful"] == 5
    broker.send_metrics()  # nothing tallied since: nothing sent
    assert redis_client.info("commandstats")["cmdstat_evalsha"]["calls"] == 1


def test_a_field_that_is_not_a_number_costs_that_field_only(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.hset(keys.stats, "successful", "garbage")
    redis_client.hset(keys.metrics, f"{ECHO}|successful", "garbage")
    assert broker.finish(WORKER, [finish(reserve())]) == []
    broker.send_metrics()
    assert redis_client.hget(keys.stats, "successful") == "garbage"
    assert metrics_without_garbage(redis_client, keys)[f"{ECHO}|run:0"] == 1


def metrics_without_garbage(client: redis.Redis, keys: QueueKeys) -> dict[str, int]:
    found = client.hgetall(keys.metrics)
    return {field: int(value) for field, value in found.items() if value.isdigit()}


def test_the_done_index_is_trimmed_by_age_when_metrics_are_sent(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.zadd(keys.done, {"old@default": 1})
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])
    assert redis_client.zrange(keys.done, 0, -1) == ["old@default"]
    broker.send_metrics()  # the new id comes in as the old one goes
    assert redis_client.zrange(keys.done, 0, -1) == [lease.task_id]


def test_the_done_index_dates_each_call_by_its_age_on_the_redis_clock(
    broker: Broker,
    reserve: Callable[[], Lease],
    keys: QueueKeys,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two finish calls half a second apart by the worker's monotonic clock are half a second
    apart in the index, dated back from the send's Redis time; a retry is not indexed."""
    clock = iter([100.0, 100.5, 101.0])  # the first call, the second, the send
    monkeypatch.setattr("django_threadmill.broker.metrics.monotonic", lambda: next(clock))
    first, second, retried = reserve(), reserve(), reserve()
    broker.finish(WORKER, [finish(first)])
    broker.finish(WORKER, [finish(second, Outcome.FAILED), finish(retried, Outcome.RETRY)])
    before_ms = redis_now_ms(redis_client)
    broker.send_metrics()
    after_ms = redis_now_ms(redis_client)

    scores = dict(redis_client.zrange(keys.done, 0, -1, withscores=True))
    assert scores.keys() == {first.task_id, second.task_id}
    assert scores[second.task_id] - scores[first.task_id] == 500
    assert before_ms - 500 <= scores[second.task_id] <= after_ms - 500
