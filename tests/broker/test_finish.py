"""finish.lua: record success, failure or a retry, fenced by state and token."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Finish, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish, redis_now_ms, start

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def test_success_is_stored_expires_and_is_indexed_with_the_metrics(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    before_ms = redis_now_ms(redis_client)
    done = finish(running, value='{"ok":1}')._replace(finished_ms=1_700_000_000_999)
    assert broker.finish(WORKER, [done]) == []
    key = keys.record(running.task_id)
    assert redis_client.hmget(key, "state", "result", "finished_ms", "workers") == [
        "successful",
        '{"ok":1}',
        "1700000000999",
        WORKER,
    ]
    assert redis_client.zscore(keys.leases, running.task_id) is None
    assert 0 < redis_client.pttl(key) <= broker.settings.result_ttl_ms
    assert redis_client.zcard(keys.done) == 0  # the index and counters go on the ack writer's clock
    broker.send_metrics()
    assert redis_client.hget(keys.stats, "successful") == "1"
    # Dated on the Redis clock, back to when the outcome was recorded, not to the send.
    [(task_id, score)] = redis_client.zrange(keys.done, 0, -1, withscores=True)
    assert task_id == running.task_id
    assert before_ms <= score <= redis_now_ms(redis_client)


def test_failure_stores_the_error_of_the_attempt(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    assert broker.finish(WORKER, [finish(running, Outcome.FAILED, ERROR)]) == []
    key = keys.record(running.task_id)
    assert redis_client.hmget(key, "state", "nerrors", "error:1") == ["failed", "1", ERROR]
    assert redis_client.hget(key, "finished_ms") is not None
    assert redis_client.pttl(key) > 0
    broker.send_metrics()  # the index and counters go on the ack writer's clock
    assert redis_client.zrange(keys.done, 0, -1) == [running.task_id]
    assert redis_client.hget(keys.stats, "failed") == "1"


def test_ack_of_a_reserved_task_records_the_attempt(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    done = finish(lease)._replace(started_ms=1_700_000_000_001)
    assert broker.finish(WORKER, [done]) == []
    fields = redis_client.hmget(keys.record(lease.task_id), "state", "workers", "started_ms")
    assert fields == ["successful", WORKER, "1700000000001"]


def test_retry_waits_in_delayed_and_keeps_history(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    retry = finish(running, Outcome.RETRY, ERROR)._replace(retry_delay_ms=3_600_000)
    assert broker.finish(WORKER, [retry]) == []
    key = keys.record(running.task_id)
    assert redis_client.hmget(key, "state", "nerrors", "error:1") == ["ready", "1", ERROR]
    assert redis_client.zscore(keys.delayed, running.task_id) is not None
    assert redis_client.zcard(keys.leases) == 0
    assert redis_client.zcard(keys.done) == 0
    assert redis_client.pttl(key) == -1
    broker.send_metrics()  # counters go on the ack writer's clock
    assert redis_client.hget(keys.stats, "retry") == "1"


def test_retried_attempt_comes_back_with_its_errors(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.finish(WORKER, [finish(running, Outcome.RETRY, ERROR)])
    redis_client.zadd(keys.delayed, {running.task_id: 1}, xx=True)
    [again] = broker.acquire("default", 1).reservations
    assert again.lease.token != running.token
    assert again.errors == [ERROR]
    assert again.workers == [WORKER]
    first_started = redis_client.hget(keys.record(running.task_id), "started_ms")
    assert again.started_ms == int(first_started or 0)
    second = start(again.lease)
    broker.start("worker-b", [second])
    fields = redis_client.hmget(
        keys.record(running.task_id), "workers", "started_ms", "attempted_ms"
    )
    assert fields == [f"{WORKER}\nworker-b", first_started, str(second.started_ms)]


def test_ack_of_a_reserved_retry_adds_its_attempt_to_the_earlier_ones(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.finish(WORKER, [finish(running, Outcome.RETRY, ERROR)])
    redis_client.zadd(keys.delayed, {running.task_id: 1}, xx=True)
    key = keys.record(running.task_id)
    first_started = redis_client.hget(key, "started_ms")
    [again] = broker.acquire("default", 1).reservations
    done = finish(again.lease)._replace(started_ms=1_700_000_000_002)  # no start notice sent
    assert broker.finish("worker-b", [done]) == []
    fields = redis_client.hmget(key, "state", "workers", "started_ms", "attempted_ms")
    assert fields == ["successful", f"{WORKER}\nworker-b", first_started, "1700000000002"]


def test_stale_token_changes_nothing(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    before = redis_client.hgetall(keys.record(running.task_id))
    late = finish(running._replace(token="stale"))
    assert broker.finish(WORKER, [late]) == [(late, Ack.STALE)]
    assert redis_client.hgetall(keys.record(running.task_id)) == before
    assert redis_client.zcard(keys.done) == 0


def test_duplicate_ack_is_a_noop(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    assert broker.finish(WORKER, [finish(running, value='"first"')]) == []
    duplicate = finish(running, Outcome.FAILED, ERROR)
    assert broker.finish(WORKER, [duplicate]) == [(duplicate, Ack.ALREADY)]
    key = keys.record(running.task_id)
    assert redis_client.hmget(key, "state", "result", "nerrors") == ["successful", '"first"', "0"]
    broker.send_metrics()  # counters go on the ack writer's clock
    assert redis_client.hget(keys.stats, "failed") is None


def test_late_ack_after_reap_of_a_reservation_is_noop(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    state_of: Callable[[str], str | None],
) -> None:
    lease = reserve()
    expire_lease(lease.task_id)
    assert broker.reap("default", 10).released == [lease.task_id]
    late = finish(lease)
    assert broker.finish(WORKER, [late]) == [(late, Ack.STALE)]  # released: no token kept
    assert state_of(lease.task_id) == "ready"


def test_late_ack_after_reap_of_a_running_attempt_is_noop(
    broker: Broker,
    running: Lease,
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    expire_lease(running.task_id)
    [expired] = broker.reap("default", 10).expired
    assert broker.finish("", [finish(expired.lease, Outcome.FAILED, ERROR)]) == []  # the reaper
    late = finish(running, value='"late"')
    assert broker.finish(WORKER, [late]) == [(late, Ack.STALE)]
    key = keys.record(running.task_id)
    assert redis_client.hmget(key, "state", "result", "error:1") == ["failed", None, ERROR]


def test_batch_reports_only_the_stale_acks(broker: Broker, reserve: Callable[[], Lease]) -> None:
    first, second = reserve(), reserve()
    stale = finish(second._replace(token="stale"))
    assert broker.finish(WORKER, [finish(first), stale]) == [(stale, Ack.STALE)]


@pytest.mark.parametrize("tasks_options", [{"result_ttl": None}])
def test_results_kept_forever_without_result_ttl(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.zadd(keys.done, {"old@default": 1})
    broker.finish(WORKER, [finish(running)])
    broker.send_metrics()
    assert redis_client.pttl(keys.record(running.task_id)) == -1
    assert redis_client.zcard(keys.done) == 2


def test_empty_batch_sends_nothing(broker: Broker) -> None:
    finishes: list[Finish] = []
    assert broker.finish(WORKER, finishes) == []


def test_reaper_finish_on_a_renewed_lease_is_stale(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()  # its reservation deadline is still ahead: the worker is alive
    late = finish(lease, Outcome.FAILED, ERROR)
    assert broker.finish("", [late]) == [(late, Ack.STALE)]
    assert redis_client.hget(keys.record(lease.task_id), "state") == "reserved"


def test_ack_without_a_worker_id_records_no_attempt(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    redis_client.zadd(keys.leases, {lease.task_id: 0})  # the lease lapsed: the reaper settles
    assert broker.finish("", [finish(lease, Outcome.FAILED, ERROR)]) == []
    fields = redis_client.hmget(keys.record(lease.task_id), "state", "workers", "started_ms")
    assert fields == ["failed", None, None]
