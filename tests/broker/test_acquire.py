"""acquire.lua: promote due delayed tasks, reserve ready ones in order, fence with a token."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.acquisition import PROMOTE_LIMIT
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.raw_replies import Undecodable
from django_threadmill.codec.times import now_ms

from .conftest import WORKER, new_task

HOUR_MS = 3_600_000


def acquired_ids(broker: Broker, count: int, queue: str = "default") -> list[str]:
    return [r.lease.task_id for r in broker.acquire(queue, count).reservations]


def test_empty_queue_returns_nothing(broker: Broker) -> None:
    acquired = broker.acquire("default", 10)
    assert acquired.reservations == []
    assert acquired.next_due_ms is None


def test_reservation_carries_payload_and_first_token(
    broker: Broker, enqueue: Callable[..., NewTask]
) -> None:
    before_ms = broker.server_time_ms()
    task = enqueue()
    [reservation] = broker.acquire("default", 5).reservations
    assert reservation.lease.task_id == task.id
    assert reservation.lease.queue == "default"
    # A new fence counter starts at the Redis clock: above the small counts of old leases.
    assert int(reservation.lease.token) > before_ms
    assert reservation.payload == task.payload
    assert reservation.enqueued_ms is not None
    assert reservation.enqueued_ms >= before_ms
    assert reservation.workers == []
    assert reservation.started_ms is None
    assert reservation.errors == []


def test_one_call_fences_its_tasks_with_one_new_token(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    tasks = [enqueue() for _ in range(3)]
    first = broker.acquire("default", 2).reservations
    [last] = broker.acquire("default", 2).reservations
    assert len({r.lease.token for r in first}) == 1
    assert last.lease.token != first[0].lease.token
    tokens = [redis_client.hget(keys.record(task.id), "token") for task in tasks]
    assert tokens == [r.lease.token for r in [*first, last]]


def test_reserve_marks_reserved_and_leases_by_redis_time(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue()
    seconds, micros = redis_client.time()
    before_ms = seconds * 1000 + micros // 1000
    broker.acquire("default", 1)
    assert redis_client.hget(keys.record(task.id), "state") == "reserved"
    assert redis_client.zcard(keys.ready) == 0
    deadline = redis_client.zscore(keys.leases, task.id)
    assert deadline is not None
    assert deadline >= before_ms + broker.settings.lease_ttl_ms


def test_higher_priority_first_then_fifo(broker: Broker) -> None:
    tasks = [new_task(priority=p) for p in (0, -10, 50, 0, 50, 100, -10)]
    broker.enqueue("default", tasks)
    expected = [tasks[i].id for i in (5, 2, 4, 0, 3, 1, 6)]
    assert acquired_ids(broker, 3) + acquired_ids(broker, 10) == expected


def test_fifo_holds_across_enqueue_calls(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    ids = [enqueue().id for _ in range(5)]
    assert acquired_ids(broker, 5) == ids


def test_count_bounds_each_batch(broker: Broker) -> None:
    broker.enqueue("default", [new_task() for _ in range(7)])
    assert [len(acquired_ids(broker, 3)) for _ in range(4)] == [3, 3, 1, 0]


def test_queues_are_separate(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    email = enqueue("emails")
    assert acquired_ids(broker, 5, "default") == []
    [reservation] = broker.acquire("emails", 5).reservations
    assert reservation.lease.task_id == email.id
    assert reservation.lease.queue == "emails"


def test_not_yet_due_task_waits_and_reports_when_due(
    broker: Broker, enqueue: Callable[..., NewTask]
) -> None:
    enqueue(run_after_ms=now_ms() + HOUR_MS)
    acquired = broker.acquire("default", 5)
    assert acquired.reservations == []
    assert acquired.next_due_ms is not None
    assert 0 < acquired.next_due_ms <= HOUR_MS


def test_due_delayed_task_is_promoted_in_priority_order(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    ready = enqueue(priority=0)
    delayed = enqueue(priority=10, run_after_ms=now_ms() + HOUR_MS)
    assert redis_client.zadd(keys.delayed, {delayed.id: 1}, xx=True, ch=True) == 1
    acquired = broker.acquire("default", 1)
    assert [r.lease.task_id for r in acquired.reservations] == [delayed.id]
    assert acquired.next_due_ms is None
    assert redis_client.zcard(keys.delayed) == 0
    assert acquired_ids(broker, 1) == [ready.id]


def test_ghost_ids_are_dropped(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    first, ghost, last = enqueue(), enqueue(), enqueue()
    redis_client.delete(keys.record(ghost.id))
    delayed_ghost = enqueue(run_after_ms=now_ms() + HOUR_MS)
    redis_client.delete(keys.record(delayed_ghost.id))
    redis_client.zadd(keys.delayed, {delayed_ghost.id: 1}, xx=True)
    assert acquired_ids(broker, 10) == [first.id, last.id]
    assert redis_client.zcard(keys.delayed) == 0
    assert set(redis_client.zrange(keys.leases, 0, -1)) == {first.id, last.id}


def test_id_in_ready_whose_record_is_not_ready_is_skipped(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue()
    [reservation] = broker.acquire("default", 1).reservations
    redis_client.zadd(keys.ready, {task.id: 1})  # a stray duplicate entry
    assert acquired_ids(broker, 5) == []
    assert redis_client.hget(keys.record(task.id), "token") == reservation.lease.token


def test_a_ready_record_without_payload_is_set_aside_and_its_batch_reserved(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """Its missing field came back as nil among the batch's fields: the prefetcher died on it,
    and after the lease lapsed the reaper put it back at the head, for the next one."""
    first, damaged, last = enqueue(), enqueue(), enqueue()
    redis_client.hdel(keys.record(damaged.id), "payload")
    reserved = broker.acquire("default", 10).reservations
    assert [(r.lease.task_id, r.payload) for r in reserved] == [
        (first.id, first.payload),
        (last.id, last.payload),
    ]
    assert redis_client.hget(keys.damaged, damaged.id).endswith(" acquire: no payload field")
    assert redis_client.hget(keys.record(damaged.id), "state") == "ready"  # as it was found
    assert redis_client.zscore(keys.ready, damaged.id) is None


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("payload", b'{"path":"\xff\xfe"}', "payload not UTF-8"),
        ("workflow", b"\xe9:0", "workflow not UTF-8"),
        ("workers", b"host\xc3:1", "workers not UTF-8"),
        ("error:1", b"\xff", "error:1 not UTF-8"),
    ],
)
def test_a_field_that_is_not_utf8_sets_its_task_aside_and_the_batch_is_reserved(
    field: str,
    value: bytes,
    reason: str,
    broker: Broker,
    enqueue: Callable[..., NewTask],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    """Decoded as a whole, the reply failed on such a field: the prefetcher died, its batch
    waited out its lease, and the reaper put the damaged task back at the head."""
    first, damaged, last = enqueue(), enqueue(), enqueue()
    record = keys.record(damaged.id)
    redis_client.hset(record, mapping={"nerrors": 1, "error:1": "{}"})  # workers are read then
    redis_client.hset(record, field, value)

    reserved = broker.acquire("default", 10).reservations

    assert [r.lease.task_id for r in reserved] == [first.id, last.id]
    assert redis_client.hget(keys.damaged, damaged.id).endswith(f" acquire: {reason}")
    assert redis_client.hmget(record, "state", "token") == ["ready", ""]  # as acquire found it
    assert redis_client.zscore(keys.leases, damaged.id) is None
    assert redis_client.zscore(keys.ready, damaged.id) is None


def test_an_id_that_is_not_utf8_is_set_aside_by_its_bytes(
    broker: Broker,
    enqueue: Callable[..., NewTask],
    keys: QueueKeys,
    redis_client: redis.Redis,
    redis_url: str,
) -> None:
    """An index entry written by hand: its id reaches Python only as bytes, and set_aside.lua
    must be given those bytes back to find the record."""
    good = enqueue()
    raw_id = b"\xff\xfe@default"
    raw_record = keys.record_prefix.encode() + raw_id
    raw_client = redis.Redis.from_url(redis_url)
    try:
        raw_client.hset(raw_record, mapping=redis_client.hgetall(keys.record(good.id)))
        raw_client.zadd(keys.ready, {raw_id: 0})

        [reservation] = broker.acquire("default", 10).reservations

        assert reservation.lease.task_id == good.id
        assert raw_client.hget(keys.damaged, raw_id).endswith(b" acquire: id not UTF-8")
        assert raw_client.zscore(keys.leases, raw_id) is None
    finally:  # keys that are not UTF-8 would fail the leak guard's decoded SCAN
        raw_client.delete(raw_record, keys.damaged)
        raw_client.close()


def test_set_aside_leaves_a_record_another_acquire_holds(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """Fenced by the token: a task released and reserved again since is not the call's."""
    task = enqueue()
    [reservation] = broker.acquire("default", 1).reservations
    stale = Undecodable(task.id.encode(), "payload not UTF-8")

    broker._set_aside("default", "default", str(int(reservation.lease.token) - 1), [stale])

    assert redis_client.hget(keys.damaged, task.id) is None
    assert redis_client.hget(keys.record(task.id), "state") == "reserved"
    assert redis_client.zscore(keys.leases, task.id) is not None


def test_token_grows_with_each_reservation(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    enqueue()
    first = broker.acquire("default", 1).reservations[0].lease
    assert broker.release([first]) == 1
    second = broker.acquire("default", 1).reservations[0].lease
    assert int(second.token) > int(first.token)


def test_leftover_work_leaves_one_wake_token(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [new_task() for _ in range(3)])
    redis_client.delete(keys.wake)
    broker.acquire("default", 1)
    assert redis_client.llen(keys.wake) == 1
    broker.acquire("default", 1)
    assert redis_client.llen(keys.wake) == 1


def test_drained_queue_leaves_no_wake_token(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    enqueue()
    redis_client.delete(keys.wake)
    broker.acquire("default", 5)
    assert redis_client.llen(keys.wake) == 0


def test_wait_for_work_returns_on_a_wake_token(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    enqueue()
    assert broker.wait_for_work(["emails", "default"], worker_id=WORKER, timeout_s=5) is True
    assert redis_client.llen(keys.wake) == 0
    assert broker.wait_for_work(["default"], worker_id=WORKER, timeout_s=0.01) is False


def test_wake_process_returns_only_that_process(broker: Broker) -> None:
    broker.wake_process(["default"], WORKER)
    assert broker.wait_for_work(["default"], worker_id="other", timeout_s=0.01) is False
    assert broker.wait_for_work(["default"], worker_id=WORKER, timeout_s=5) is True


def test_promotion_is_bounded_per_call(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    later = now_ms() + HOUR_MS
    tasks = [new_task(run_after_ms=later) for _ in range(PROMOTE_LIMIT + 2)]
    broker.enqueue("default", tasks)
    redis_client.zadd(keys.delayed, {task.id: n for n, task in enumerate(tasks, 1)}, xx=True)
    assert acquired_ids(broker, 1) == [tasks[0].id]
    assert redis_client.zcard(keys.delayed) == 2
    assert redis_client.zcard(keys.ready) == PROMOTE_LIMIT - 1
    broker.acquire("default", 1)
    assert redis_client.zcard(keys.delayed) == 0


def test_acquire_from_asks_several_queues_and_answers_in_their_order(broker: Broker) -> None:
    tasks = {queue: [new_task(queue) for _ in range(3)] for queue in ("default", "emails")}
    for queue, queue_tasks in tasks.items():
        broker.enqueue(queue, queue_tasks)

    emails, default, reports = broker.acquire_from({"emails": 2, "default": 5, "reports": 1})

    assert [r.lease.task_id for r in emails.reservations] == [t.id for t in tasks["emails"][:2]]
    assert {r.lease.queue for r in emails.reservations} == {"emails"}
    assert [r.lease.task_id for r in default.reservations] == [t.id for t in tasks["default"]]
    assert reports.reservations == []
    assert broker.acquire_from({}) == []


def test_one_reply_carries_each_tasks_own_errors(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """The reply is flat, each task's error texts after its fields: counts 2, 0 and 1 in a row."""
    tasks = [new_task() for _ in range(3)]
    broker.enqueue("default", tasks)
    histories = [["first failure", "second failure"], [], ["only failure"]]
    for task, errors in zip(tasks, histories, strict=True):
        fields = {f"error:{n}": error for n, error in enumerate(errors, 1)}
        redis_client.hset(keys.record(task.id), mapping={"nerrors": len(errors), **fields})
    reservations = broker.acquire("default", 3).reservations
    assert [(r.lease.task_id, r.errors) for r in reservations] == [
        (task.id, errors) for task, errors in zip(tasks, histories, strict=True)
    ]
    assert [r.payload for r in reservations] == [task.payload for task in tasks]
