"""purge.lua: delete finished results oldest first, in batches; pending tasks stay."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def finished_leases(
    broker: Broker, reserve: Callable[[], Lease], outcomes: list[Outcome]
) -> list[Lease]:
    leases = [reserve() for _ in outcomes]
    broker.finish(
        WORKER,
        [finish(lease, outcome, ERROR) for lease, outcome in zip(leases, outcomes, strict=True)],
    )
    broker.send_metrics()  # and the done index that purge walks
    return leases


def test_purge_deletes_finished_and_keeps_pending(
    broker: Broker,
    reserve: Callable[[], Lease],
    enqueue: Callable[..., NewTask],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    done = finished_leases(broker, reserve, [Outcome.SUCCESSFUL, Outcome.FAILED])
    held, waiting = reserve(), enqueue()
    assert broker.purge("default") == 2
    for lease in done:
        assert redis_client.exists(keys.record(lease.task_id)) == 0
    assert redis_client.zcard(keys.done) == 0
    assert redis_client.hget(keys.record(held.task_id), "state") == "reserved"
    assert redis_client.hget(keys.record(waiting.id), "state") == "ready"


def test_purge_one_state_skips_the_other_across_batches(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    outcomes = [Outcome.SUCCESSFUL, Outcome.FAILED] * 4
    leases = finished_leases(broker, reserve, outcomes)
    assert broker.purge("default", state="failed", batch_size=3) == 4
    kept = [lease.task_id for lease in leases[::2]]
    assert sorted(redis_client.zrange(keys.done, 0, -1)) == sorted(kept)
    for task_id in kept:
        assert redis_client.hget(keys.record(task_id), "state") == "successful"


def test_purge_in_small_batches_reaches_the_end(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    finished_leases(broker, reserve, [Outcome.SUCCESSFUL] * 5)
    assert broker.purge("default", batch_size=2) == 5
    assert redis_client.zcard(keys.done) == 0


def test_stale_index_entries_are_dropped_without_deleting(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    [requeued] = finished_leases(broker, reserve, [Outcome.FAILED])
    broker.requeue(requeued.task_id)
    redis_client.zadd(keys.done, {requeued.task_id: 1, "expired@default": 2})
    assert broker.purge("default", state="successful") == 0
    assert redis_client.zcard(keys.done) == 0
    assert redis_client.hget(keys.record(requeued.task_id), "state") == "ready"


def test_purge_of_an_empty_queue(broker: Broker) -> None:
    assert broker.purge("default") == 0
