"""cancel.lua: fail a waiting task with the given error; anything held or finished stays."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.times import now_ms

from .conftest import WORKER, finish, start

CANCELLED = '{"exception_class_path":"django_threadmill.exceptions.Cancelled","traceback":""}'
FIRST_ERROR = '{"exception_class_path":"ValueError","traceback":"first"}'


def test_ready_task_is_failed_with_the_error(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue()
    assert broker.cancel(task.id, CANCELLED, 1_700_000_000_000) == "cancelled"
    key = keys.record(task.id)
    assert redis_client.hmget(key, "state", "nerrors", "error:1", "finished_ms") == [
        "failed",
        "1",
        CANCELLED,
        "1700000000000",
    ]
    assert redis_client.zcard(keys.ready) == 0
    assert redis_client.zrange(keys.done, 0, -1) == [task.id]
    assert 0 < redis_client.pttl(key) <= broker.settings.result_ttl_ms
    assert broker.acquire("default", 5).reservations == []


def test_delayed_task_is_cancelled(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue(run_after_ms=now_ms() + 3_600_000)
    assert broker.cancel(task.id, CANCELLED, now_ms()) == "cancelled"
    assert redis_client.zcard(keys.delayed) == 0
    assert redis_client.hget(keys.record(task.id), "state") == "failed"


def test_task_waiting_for_a_retry_keeps_its_first_error(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease, Outcome.RETRY, FIRST_ERROR)])
    assert broker.cancel(lease.task_id, CANCELLED, now_ms()) == "cancelled"
    fields = redis_client.hmget(keys.record(lease.task_id), "nerrors", "error:1", "error:2")
    assert fields == ["2", FIRST_ERROR, CANCELLED]
    assert redis_client.zcard(keys.delayed) == 0


@pytest.mark.parametrize("started", [False, True], ids=["reserved", "running"])
def test_held_task_is_not_cancelled(
    broker: Broker,
    reserve: Callable[[], Lease],
    snapshot: Callable[[], dict[str, object]],
    started: bool,
) -> None:
    lease = reserve()
    if started:
        broker.start(WORKER, [start(lease)])
    before = snapshot()
    state = "running" if started else "reserved"
    assert broker.cancel(lease.task_id, CANCELLED, now_ms()) == state
    assert snapshot() == before


def test_finished_task_is_not_cancelled(
    broker: Broker, reserve: Callable[[], Lease], snapshot: Callable[[], dict[str, object]]
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])
    before = snapshot()
    assert broker.cancel(lease.task_id, CANCELLED, now_ms()) == "successful"
    assert snapshot() == before


@pytest.mark.parametrize("task_id", ["0" * 32 + "@default", "no-queue-in-this-id"])
def test_unknown_task_is_missing(broker: Broker, task_id: str) -> None:
    assert broker.cancel(task_id, CANCELLED, now_ms()) == "missing"


@pytest.mark.parametrize("tasks_options", [{"result_ttl": None}])
def test_cancelled_record_kept_without_result_ttl(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue()
    broker.cancel(task.id, CANCELLED, now_ms())
    assert redis_client.pttl(keys.record(task.id)) == -1
