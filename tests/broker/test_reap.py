"""reap.lua: expired reservations go back to ready in place; expired running ones are reported."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish, start

ERROR = '{"exception_class_path":"ValueError","traceback":"first"}'


def test_expired_reservation_returns_to_its_place(
    broker: Broker,
    enqueue: Callable[..., NewTask],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    first, second = enqueue(), enqueue()
    score = redis_client.zscore(keys.ready, first.id)
    [lease] = (r.lease for r in broker.acquire("default", 1).reservations)
    expire_lease(lease.task_id)
    redis_client.delete(keys.wake)
    reaped = broker.reap("default", 100)
    assert reaped.released == [first.id]
    assert reaped.expired == []
    assert redis_client.hget(keys.record(first.id), "state") == "ready"
    assert redis_client.zscore(keys.ready, first.id) == score
    assert redis_client.zcard(keys.leases) == 0
    assert redis_client.llen(keys.wake) == 1
    again = [r.lease for r in broker.acquire("default", 2).reservations]
    assert [a.task_id for a in again] == [first.id, second.id]
    tokens = {a.token for a in again}
    assert len(tokens) == 1  # one new token for the call
    assert lease.token not in tokens


def test_expired_running_attempt_is_reported_not_changed(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    lease = reserve()
    broker.start(WORKER, [start(lease)])
    expire_lease(lease.task_id)
    before = redis_client.hgetall(keys.record(lease.task_id))
    reaped = broker.reap("default", 100)
    assert reaped.released == []
    [expired] = reaped.expired
    assert expired.lease == lease._replace(waited_ms=None, reserved_ms=0)  # reap cannot know it
    assert expired.payload == before["payload"]
    assert expired.workers == [WORKER]
    assert expired.deadline_ms == 1
    assert expired.errors == []
    assert redis_client.hgetall(keys.record(lease.task_id)) == before
    assert redis_client.zscore(keys.leases, lease.task_id) == 1


def test_expired_running_retry_carries_earlier_errors(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease, Outcome.RETRY, ERROR)])
    redis_client.zadd(keys.delayed, {lease.task_id: 1}, xx=True)
    [again] = (r.lease for r in broker.acquire("default", 1).reservations)
    broker.start("worker-b", [start(again)])
    expire_lease(again.task_id)
    [expired] = broker.reap("default", 100).expired
    assert expired.errors == [ERROR]
    assert expired.workers == [WORKER, "worker-b"]
    assert expired.lease.token == again.token != lease.token


def test_live_leases_are_left_alone(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    reserve()
    running = reserve()
    broker.start(WORKER, [start(running)])
    reaped = broker.reap("default", 100)
    assert (reaped.released, reaped.expired) == ([], [])
    assert redis_client.zcard(keys.leases) == 2


def test_dry_run_reports_and_changes_nothing(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
    snapshot: Callable[[], dict[str, object]],
) -> None:
    reserved, running, ghost = reserve(), reserve(), reserve()
    broker.start(WORKER, [start(running)])
    for lease in (reserved, running, ghost):
        expire_lease(lease.task_id)
    redis_client.delete(keys.record(ghost.task_id), keys.wake)
    before = snapshot()
    reaped = broker.reap("default", 100, dry_run=True)
    assert reaped.released == [reserved.task_id]
    assert [e.lease for e in reaped.expired] == [running._replace(waited_ms=None, reserved_ms=0)]
    assert snapshot() == before


def test_ghost_leases_are_dropped(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    deleted, finished = reserve(), reserve()
    redis_client.delete(keys.record(deleted.task_id))
    broker.finish(WORKER, [finish(finished)])
    redis_client.zadd(keys.leases, {finished.task_id: 1})
    expire_lease(deleted.task_id)
    reaped = broker.reap("default", 100)
    assert (reaped.released, reaped.expired, reaped.looked_at) == ([], [], 2)
    assert redis_client.zcard(keys.leases) == 0
    assert redis_client.hget(keys.record(finished.task_id), "state") == "successful"


@pytest.mark.parametrize("token", [None, ""], ids=["no token", "empty token"])
def test_a_running_record_without_a_lease_token_is_set_aside(
    token: str | None,
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    """finish.lua cannot settle it: it came back stale, its lease stayed, and the reaper asked
    for the same batch again, forever."""
    damaged, healthy = reserve(), reserve()
    assert broker.start(WORKER, [start(damaged), start(healthy)]) == []
    if token is None:
        redis_client.hdel(keys.record(damaged.task_id), "token")
    else:
        redis_client.hset(keys.record(damaged.task_id), "token", token)
    expire_lease(damaged.task_id)
    expire_lease(healthy.task_id)

    reaped = broker.reap("default", 100)

    assert [e.lease.task_id for e in reaped.expired] == [healthy.task_id]
    assert reaped.looked_at == 2
    reason = redis_client.hget(keys.damaged, damaged.task_id)
    assert reason.endswith(" reap: running without a lease token")
    assert redis_client.zrange(keys.leases, 0, -1) == [healthy.task_id]


def test_limit_bounds_one_call(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
) -> None:
    leases = [reserve() for _ in range(3)]
    for lease in leases:
        expire_lease(lease.task_id)
    replies = [broker.reap("default", 2) for _ in range(3)]
    assert [(len(reply.released), reply.looked_at) for reply in replies] == [(2, 2), (1, 1), (0, 0)]


def test_empty_queue_reaps_nothing(broker: Broker) -> None:
    reaped = broker.reap("default", 100)
    assert (reaped.released, reaped.expired, reaped.looked_at) == ([], [], 0)
