"""renew.lua: push the deadlines of held leases, report lost ones, track live workers."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish, redis_now_ms, start

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def test_renew_pushes_reserved_and_running_deadlines(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    reserved, running = reserve(), reserve()
    broker.start(WORKER, [start(running)])
    redis_client.zadd(keys.leases, {reserved.task_id: 1, running.task_id: 1}, xx=True)
    before_ms = redis_now_ms(redis_client)
    assert broker.renew(WORKER, [reserved, running]) == []
    for lease in (reserved, running):
        deadline = redis_client.zscore(keys.leases, lease.task_id)
        assert deadline is not None
        assert deadline >= before_ms + broker.settings.lease_ttl_ms


def test_lost_leases_are_reported_and_not_recreated(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    held, wrong_token, finished = reserve(), reserve(), reserve()
    broker.finish(WORKER, [finish(finished)])
    missing = Lease(task_id="f" * 32 + "@default", queue="default", token="1")
    lost = broker.renew(WORKER, [held, wrong_token._replace(token="stale"), finished, missing])
    assert lost == [wrong_token.task_id, missing.task_id]
    assert redis_client.zscore(keys.leases, finished.task_id) is None
    assert redis_client.zscore(keys.leases, missing.task_id) is None


def test_attempt_finished_under_this_token_is_not_lost(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])
    assert broker.renew(WORKER, [lease]) == []
    assert redis_client.zscore(keys.leases, lease.task_id) is None
    assert redis_client.hget(keys.held, WORKER) == "0"


def test_attempt_retried_under_this_token_is_not_lost(
    broker: Broker, running: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """A retry puts the task back to ready with this token on it: the attempt ended here, as
    a success or failure does, and the worker's renewal taken before it must not call it lost."""
    assert broker.finish(WORKER, [finish(running, Outcome.RETRY, ERROR)]) == []
    assert broker.renew(WORKER, [running]) == []
    assert redis_client.zscore(keys.leases, running.task_id) is None
    assert redis_client.hget(keys.held, WORKER) == "0"


def test_a_retry_the_reaper_settled_or_that_was_reserved_again_is_lost(
    broker: Broker,
    running: Lease,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    """The fence holds for a ready record: the reaper's retry keeps no token, and a task
    reserved again carries another."""
    reaped = running
    expire_lease(reaped.task_id)
    [expired] = broker.reap("default", 10).expired
    assert broker.finish("", [finish(expired.lease, Outcome.RETRY, ERROR)]) == []  # the reaper
    redis_client.zrem(keys.delayed, reaped.task_id)  # not due again in this test
    retried = reserve()
    broker.start(WORKER, [start(retried)])
    assert broker.finish(WORKER, [finish(retried, Outcome.RETRY, ERROR)]) == []
    redis_client.zadd(keys.delayed, {retried.task_id: 1}, xx=True)  # due now
    [again] = broker.acquire("default", 1).reservations
    assert again.lease.task_id == retried.task_id
    assert again.lease.token != retried.token
    assert broker.renew(WORKER, [reaped, retried]) == [reaped.task_id, retried.task_id]
    assert redis_client.hget(keys.record(reaped.task_id), "state") == "ready"


def test_renew_records_the_worker_and_what_it_holds(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    first, second = reserve(), reserve()
    before_ms = redis_now_ms(redis_client)
    broker.renew(WORKER, [first, second._replace(token="stale")])
    seen = redis_client.zscore(keys.workers, WORKER)
    assert seen is not None
    assert seen >= before_ms
    assert redis_client.hget(keys.held, WORKER) == "1"


def test_silent_workers_are_forgotten(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.zadd(keys.workers, {"gone": 1})
    redis_client.hset(keys.held, "gone", 3)
    broker.renew(WORKER, [reserve()])
    assert redis_client.zrange(keys.workers, 0, -1) == [WORKER]
    assert redis_client.hgetall(keys.held) == {WORKER: "1"}


def test_renew_spans_queues(broker: Broker, enqueue: Callable[..., object]) -> None:
    enqueue("default")
    enqueue("emails")
    leases = [
        *(r.lease for r in broker.acquire("default", 1).reservations),
        *(r.lease for r in broker.acquire("emails", 1).reservations),
    ]
    stale = leases[1]._replace(token="stale")
    assert broker.renew(WORKER, [leases[0], stale]) == [stale.task_id]


def test_nothing_to_renew_sends_nothing(broker: Broker) -> None:
    assert broker.renew(WORKER, []) == []


def test_an_idle_worker_renews_as_a_heartbeat_in_each_queue_it_serves(
    broker: Broker, redis_client: redis.Redis
) -> None:
    assert broker.renew(WORKER, [], ["default", "emails"]) == []
    for queue in ("default", "emails"):
        keys = broker.queue_keys(queue)
        assert redis_client.zscore(keys.workers, WORKER) is not None
        assert redis_client.hget(keys.held, WORKER) == "0"
