"""requeue.lua: a failed task gets a new attempt in its original place, history kept."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


@pytest.fixture
def failed(broker: Broker, reserve: Callable[[], Lease]) -> Lease:
    lease = reserve()
    assert broker.finish(WORKER, [finish(lease, Outcome.FAILED, ERROR)]) == []
    return lease


def test_failed_task_is_ready_again_and_never_expires(
    broker: Broker, failed: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    score = redis_client.hget(keys.record(failed.task_id), "score")
    redis_client.delete(keys.wake)
    assert broker.requeue(failed.task_id) == "requeued"
    key = keys.record(failed.task_id)
    assert redis_client.hmget(key, "state", "finished_ms", "error:1") == ["ready", None, ERROR]
    assert redis_client.pttl(key) == -1
    assert redis_client.zcard(keys.done) == 0
    assert redis_client.zscore(keys.ready, failed.task_id) == float(score or 0)
    assert redis_client.llen(keys.wake) == 1


def test_requeued_task_is_acquired_with_its_history(broker: Broker, failed: Lease) -> None:
    broker.requeue(failed.task_id)
    [again] = broker.acquire("default", 1).reservations
    assert again.lease.token != failed.token
    assert again.errors == [ERROR]
    assert again.workers == [WORKER]


def test_late_ack_of_the_old_attempt_after_requeue_is_noop(
    broker: Broker, failed: Lease, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.requeue(failed.task_id)
    late = finish(failed)
    # Its FAILED outcome was recorded before the requeue: a duplicate of it.
    assert broker.finish(WORKER, [late]) == [(late, Ack.ALREADY)]
    broker.acquire("default", 1)
    assert broker.finish(WORKER, [late]) == [(late, Ack.STALE)]
    assert redis_client.hget(keys.record(failed.task_id), "state") == "reserved"


def test_second_requeue_reports_ready(broker: Broker, failed: Lease) -> None:
    assert broker.requeue(failed.task_id) == "requeued"
    assert broker.requeue(failed.task_id) == "ready"
    assert len(broker.acquire("default", 5).reservations) == 1


def test_successful_task_is_not_requeued(
    broker: Broker, reserve: Callable[[], Lease], snapshot: Callable[[], dict[str, object]]
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])
    before = snapshot()
    assert broker.requeue(lease.task_id) == "successful"
    assert snapshot() == before


def test_waiting_task_is_not_requeued(
    broker: Broker, enqueue: Callable[..., NewTask], snapshot: Callable[[], dict[str, object]]
) -> None:
    task = enqueue()
    before = snapshot()
    assert broker.requeue(task.id) == "ready"
    assert snapshot() == before


@pytest.mark.parametrize("task_id", ["0" * 32 + "@default", "no-queue-in-this-id"])
def test_unknown_task_is_missing(broker: Broker, task_id: str) -> None:
    assert broker.requeue(task_id) == "missing"
