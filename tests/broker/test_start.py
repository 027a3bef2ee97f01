"""start.lua: the batched start notice turns reserved into running, fenced by the token."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Ack, Broker, Lease, NewTask, Start
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, start


def test_start_marks_running_and_records_the_attempt(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    notice = Start(lease=lease, started_ms=1_700_000_000_123)
    assert broker.start(WORKER, [notice]) == []
    fields = redis_client.hmget(
        keys.record(lease.task_id), "state", "workers", "started_ms", "attempted_ms"
    )
    assert fields == ["running", WORKER, "1700000000123", None]  # a first attempt: started_ms


def test_start_sets_the_running_lease_from_redis_time(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    redis_client.zadd(keys.leases, {lease.task_id: 1}, xx=True)
    seconds, micros = redis_client.time()
    before_ms = seconds * 1000 + micros // 1000
    broker.start(WORKER, [start(lease)])
    deadline = redis_client.zscore(keys.leases, lease.task_id)
    assert deadline is not None
    assert deadline >= before_ms + broker.settings.lease_ttl_ms


def test_wrong_token_is_stale_and_changes_nothing(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    before = redis_client.hgetall(keys.record(lease.task_id))
    notice = start(lease._replace(token="stale"))
    assert broker.start(WORKER, [notice]) == [(notice, Ack.STALE)]
    assert redis_client.hgetall(keys.record(lease.task_id)) == before


def test_second_start_of_one_attempt_is_stale(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.start(WORKER, [start(lease)])
    again = start(lease)
    assert broker.start("worker-b", [again]) == [(again, Ack.STALE)]
    assert redis_client.hget(keys.record(lease.task_id), "workers") == WORKER


def test_start_of_a_missing_task_says_its_record_is_gone(broker: Broker) -> None:
    notice = start(Lease(task_id="0" * 32 + "@default", queue="default", token="1"))
    assert broker.start(WORKER, [notice]) == [(notice, Ack.MISSING)]


def test_batch_reports_only_the_stale_notices(
    broker: Broker, enqueue: Callable[..., NewTask], state_of: Callable[[str], str | None]
) -> None:
    enqueue()
    enqueue()
    enqueue("emails")
    first, second = (r.lease for r in broker.acquire("default", 2).reservations)
    [email] = (r.lease for r in broker.acquire("emails", 1).reservations)
    stale = start(second._replace(token="7"))
    assert broker.start(WORKER, [start(first), stale, start(email)]) == [(stale, Ack.STALE)]
    assert [state_of(first.task_id), state_of(second.task_id)] == ["running", "reserved"]
    email_record = broker.record(email.task_id)
    assert email_record is not None
    assert email_record["state"] == "running"


def test_empty_batch_sends_nothing(broker: Broker) -> None:
    assert broker.start(WORKER, []) == []
