"""A queue key of another type fails the script that meets it before any task moves.

Redis does not undo a script that fails half-way: acquire once popped a batch from ``ready``,
marked it reserved, then failed on a ``leases`` key of another type, so each retried fetch left
a batch in no index for good. Now each call fails with every task where it was, and once the
key is deleted every task goes on (docs/lifecycle.md, Keys of another type).
"""

import re
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Guard, GuardKind, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.times import now_ms
from django_threadmill.exceptions import BrokerUnavailable

from .conftest import WORKER, finish, new_task

WRONG_KIND = r"holds a value of the wrong kind in one of this backend's keys \(WRONGTYPE .*delete"
REFUSAL = "WRONGTYPE Operation against a key holding the wrong kind of value"
CANCELLED = '{"exception_class_path":"django_threadmill.exceptions.Cancelled","traceback":""}'
Snapshot = Callable[[], dict[str, object]]


def refused_naming(key: str, call: Callable[[], object]) -> None:
    """Check that ``call`` fails with the wrong-kind error naming ``key``."""
    with pytest.raises(BrokerUnavailable, match=WRONG_KIND) as refused:
        call()
    assert f"({REFUSAL} in {key})" in str(refused.value)


def test_acquire_with_leases_of_another_type_leaves_every_task_ready_in_place(
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    state_of: Callable[[str], str | None],
) -> None:
    tasks = [new_task(priority=priority) for priority in (0, 5, -5, 0, 9)]
    assert broker.enqueue("default", tasks).stored == len(tasks)
    damaged = tasks[3].id
    redis_client.delete(keys.record(damaged))
    redis_client.set(keys.record(damaged), "garbage")  # set aside by the call, as ever
    ready = redis_client.zrange(keys.ready, 0, -1, withscores=True)
    redis_client.set(keys.leases, "another program's value")

    with pytest.raises(BrokerUnavailable, match=WRONG_KIND):
        broker.acquire("default", 10)

    good = [(task_id, score) for task_id, score in ready if task_id != damaged]
    assert redis_client.zrange(keys.ready, 0, -1, withscores=True) == good
    assert [state_of(task_id) for task_id, _ in good] == ["ready"] * len(good)
    assert list(redis_client.hgetall(keys.damaged)) == [damaged]

    redis_client.delete(keys.leases)
    reserved = broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in reserved] == [task_id for task_id, _ in good]


def test_acquire_names_the_key_to_delete(broker: Broker, keys: QueueKeys) -> None:
    broker.enqueue("default", [new_task()])
    broker.client.set(keys.leases, "x")
    with pytest.raises(BrokerUnavailable) as refused:
        broker.acquire("default", 1)
    refusal = "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert f"({refusal} in {keys.leases})" in str(refused.value)


@pytest.mark.parametrize("script", ["reap", "release"])
def test_handing_back_with_ready_of_another_type_keeps_the_reservations(
    script: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    state_of: Callable[[str], str | None],
) -> None:
    leases = [reserve() for _ in range(3)]
    for lease in leases:
        expire_lease(lease.task_id)
    redis_client.set(keys.ready, "another program's value")

    def hand_back() -> list[str]:
        if script == "reap":
            return broker.reap("default", 100).released
        assert broker.release(leases) == len(leases)
        return [lease.task_id for lease in leases]

    with pytest.raises(BrokerUnavailable, match=WRONG_KIND):
        hand_back()

    ids = [lease.task_id for lease in leases]
    assert [state_of(task_id) for task_id in ids] == ["reserved"] * len(ids)
    assert set(redis_client.zrange(keys.leases, 0, -1)) == set(ids)

    redis_client.delete(keys.ready)
    assert sorted(hand_back()) == sorted(ids)
    assert [state_of(task_id) for task_id in ids] == ["ready"] * len(ids)
    reserved = broker.acquire("default", 10).reservations
    assert sorted(r.lease.task_id for r in reserved) == sorted(ids)


@pytest.mark.parametrize(
    ("index", "outcome"), [("outbox", Outcome.SUCCESSFUL), ("delayed", Outcome.RETRY)]
)
def test_finish_with_an_index_of_another_type_leaves_that_task_held(
    index: str,
    outcome: Outcome,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserve: Callable[[], Lease],
    state_of: Callable[[str], str | None],
) -> None:
    """The task before it in the call keeps its outcome, unindexed: nothing is lost."""
    before, held = reserve(), reserve()
    redis_client.hset(keys.record(held.task_id), "workflow", "wf:0")  # a workflow's step
    redis_client.set(getattr(keys, index), "another program's value")
    finishes = [finish(before), finish(held, outcome, '{"traceback": ""}')]

    with pytest.raises(BrokerUnavailable, match=WRONG_KIND):
        broker.finish(WORKER, finishes)

    assert state_of(before.task_id) == "successful"  # recorded; its lease entry is a ghost now
    assert state_of(held.task_id) == "reserved"
    assert redis_client.zscore(keys.leases, held.task_id) is not None

    redis_client.delete(getattr(keys, index))
    assert broker.finish(WORKER, finishes) == [(finishes[0], Ack.ALREADY)]
    if outcome is Outcome.RETRY:
        assert state_of(held.task_id) == "ready"
        assert redis_client.zscore(keys.delayed, held.task_id) is not None
    else:
        assert state_of(held.task_id) == "successful"
        assert redis_client.lrange(keys.outbox, 0, -1) == [held.task_id]


def test_a_task_enqueued_meanwhile_is_kept_too(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis, enqueue: Callable[..., NewTask]
) -> None:
    """Fetchers retry while the key is there: no retry strands anything."""
    first = enqueue()
    redis_client.set(keys.leases, "x")
    for _ in range(3):
        with pytest.raises(BrokerUnavailable):
            broker.acquire("default", 5)
        enqueue()
    assert redis_client.zcard(keys.ready) == 4
    redis_client.delete(keys.leases)
    reserved = broker.acquire("default", 5).reservations
    assert len(reserved) == 4
    assert reserved[0].lease.task_id == first.id


@pytest.mark.parametrize("index", ["delayed", "done", "outbox", "damaged"])
def test_cancel_with_an_index_of_another_type_changes_nothing(
    index: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    enqueue: Callable[..., NewTask],
    snapshot: Snapshot,
    state_of: Callable[[str], str | None],
) -> None:
    """Cancel took the task out of ready, then failed on delayed (or, for a workflow's step,
    recorded it failed and failed on done or outbox): READY in no index, or a step whose
    workflow never heard of its end. A call of many tasks may set a record aside after others
    were cancelled: P:damaged is checked first too."""
    task = enqueue()
    redis_client.hset(keys.record(task.id), "workflow", "wf:0")  # a workflow's step
    redis_client.set(getattr(keys, index), "another program's value")
    before = snapshot()

    refused_naming(getattr(keys, index), lambda: broker.cancel(task.id, CANCELLED, now_ms()))
    assert snapshot() == before

    redis_client.delete(getattr(keys, index))
    assert broker.cancel(task.id, CANCELLED, now_ms()) == "cancelled"
    assert state_of(task.id) == "failed"
    assert redis_client.zscore(keys.ready, task.id) is None
    assert redis_client.zscore(keys.done, task.id) is not None
    assert redis_client.lrange(keys.outbox, 0, -1) == [task.id]


@pytest.mark.parametrize("index", ["done", "ready", "delayed", "wake"])
def test_requeue_with_an_index_of_another_type_changes_nothing(
    index: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserve: Callable[[], Lease],
    snapshot: Snapshot,
    state_of: Callable[[str], str | None],
) -> None:
    """Requeue marked the task ready, then failed on done or ready: READY in no index."""
    lease = reserve()
    assert broker.finish(WORKER, [finish(lease, Outcome.FAILED, '{"traceback": ""}')]) == []
    redis_client.set(getattr(keys, index), "another program's value")
    before = snapshot()

    refused_naming(getattr(keys, index), lambda: broker.requeue(lease.task_id))
    assert snapshot() == before

    redis_client.delete(getattr(keys, index))
    assert broker.requeue(lease.task_id) == "requeued"
    assert state_of(lease.task_id) == "ready"
    reserved = broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in reserved] == [lease.task_id]


@pytest.mark.parametrize("index", ["ready", "delayed", "seq"])
def test_enqueue_with_an_index_of_another_type_stores_nothing(
    index: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    snapshot: Snapshot,
) -> None:
    """Enqueue stored the records, then failed on ready or delayed: each id was skipped by
    the retry as stored, READY in no index."""
    later = now_ms() + 3_600_000
    tasks = [new_task(), new_task(run_after_ms=later), new_task(priority=3)]
    redis_client.hset(getattr(keys, index), "another", "program's value")
    redis_client.sadd(broker.keyspace.queues, "default")  # enqueue registers the queue first
    before = snapshot()

    refused_naming(getattr(keys, index), lambda: broker.enqueue("default", tasks))
    after = snapshot()
    if index != "seq":
        del after[keys.seq]  # the FIFO counter moved: harmless
    assert after == before

    redis_client.delete(getattr(keys, index))
    assert broker.enqueue("default", tasks).stored == len(tasks)
    assert redis_client.zrange(keys.ready, 0, -1) == [tasks[2].id, tasks[0].id]
    assert redis_client.zrange(keys.delayed, 0, -1) == [tasks[1].id]


def test_a_schedule_slot_refused_by_ready_of_another_type_fires_once_it_is_deleted(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """The slot's marker moved and the task was stored in no index: the slot never ran."""

    def slot(at_ms: int) -> NewTask:
        task = new_task()
        return NewTask(
            id=task.id,
            payload=task.payload,
            priority=0,
            run_after_ms=None,
            guard=Guard(kind=GuardKind.SLOT, name="nightly", value_ms=at_ms),
        )

    assert broker.enqueue("default", [slot(1_000)]).stored == 0  # first seen: marked only
    marker = redis_client.get(keys.fired("nightly"))
    second = slot(2_000)
    redis_client.set(keys.ready, "another program's value")

    refused_naming(keys.ready, lambda: broker.enqueue("default", [second]))
    assert redis_client.get(keys.fired("nightly")) == marker
    assert not redis_client.exists(keys.record(second.id))

    redis_client.delete(keys.ready)
    assert broker.enqueue("default", [second]).stored == 1
    assert redis_client.zrange(keys.ready, 0, -1) == [second.id]


def test_a_queue_of_another_type_beside_others_keeps_their_reservations(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """Asked in one pipeline with a queue whose key is of another type, the other queues'
    reservations are handed over, not dropped with the error: they were leased, and each
    retried fetch left another batch reserved by nobody until its lease lapsed."""
    tasks = [new_task("default") for _ in range(3)]
    broker.enqueue("default", tasks)
    emails = broker.queue_keys("emails")
    redis_client.set(emails.ready, "another program's value")

    default, refused = broker.acquire_from({"default": 4, "emails": 4})

    assert [r.lease.task_id for r in default.reservations] == [t.id for t in tasks]
    assert default.failed is None
    assert refused.reservations == []
    assert re.search(WRONG_KIND, str(refused.failed))


def test_every_queue_of_another_type_fails_the_call(
    broker: Broker, redis_client: redis.Redis
) -> None:
    for queue in ("default", "emails"):
        redis_client.set(broker.queue_keys(queue).ready, "another program's value")
    with pytest.raises(BrokerUnavailable, match=WRONG_KIND):
        broker.acquire_from({"default": 4, "emails": 4})
