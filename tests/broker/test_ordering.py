"""The order tasks come out in: priority, FIFO, delayed, retried, requeued and released tasks,
the FIFO counter past its step, scores written by hand, and a trickle queue beside a busy one."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.fetch_plan import FetchPlan
from tests.support import running, wait_until, worker
from tests.worker.tasks import square, square_email, work_for

from .conftest import WORKER, finish, new_task

PRIORITY_STEP = 2**40  # score distance between two neighbouring priorities (common.lua)
HOUR_MS = 3_600_000
# Scores a hand may write that are no finite number; "nan" made ZADD refuse the whole call.
NOT_FINITE = ["garbage", "", "nan", "-nan", "inf", "-inf", "1e400"]


def acquired_ids(broker: Broker, count: int = 100) -> list[str]:
    return [r.lease.task_id for r in broker.acquire("default", count).reservations]


def reserved(broker: Broker) -> Lease:
    return broker.acquire("default", 1).reservations[0].lease


def test_priority_100_then_0_then_minus_100(broker: Broker) -> None:
    low, middle, high = new_task(priority=-100), new_task(priority=0), new_task(priority=100)
    broker.enqueue("default", [low, middle, high])
    assert acquired_ids(broker) == [high.id, middle.id, low.id]


def test_fifo_within_a_priority_across_calls_and_within_one(broker: Broker) -> None:
    together = [new_task() for _ in range(3)]
    alone = [new_task() for _ in range(3)]
    broker.enqueue("default", together)
    for task in alone:
        broker.enqueue("default", [task])
    assert acquired_ids(broker) == [t.id for t in together + alone]


def test_each_threads_enqueues_keep_their_order_through_shared_round_trips(
    broker: Broker,
) -> None:
    """Concurrent enqueues share round trips (docs/enqueue.md, Coalescing); each caller's own
    tasks still come out in the order it enqueued them."""
    start = threading.Barrier(8)

    def enqueue_in_turn() -> list[str]:
        start.wait()
        return [square.enqueue(n).id for n in range(50)]

    with ThreadPoolExecutor(8) as pool:
        per_thread = list(pool.map(lambda _: enqueue_in_turn(), range(8)))
    position = {task_id: n for n, task_id in enumerate(acquired_ids(broker, 400))}
    assert len(position) == 400
    for ids in per_thread:
        assert [position[i] for i in ids] == sorted(position[i] for i in ids)


def test_a_due_delayed_task_keeps_its_enqueue_place(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    delayed = new_task(run_after_ms=now_ms() + HOUR_MS)
    broker.enqueue("default", [delayed])
    later = new_task()
    broker.enqueue("default", [later])
    redis_client.zadd(keys.delayed, {delayed.id: 1}, xx=True)  # due before `later` came
    assert acquired_ids(broker) == [delayed.id, later.id]


def test_a_retry_keeps_its_place(broker: Broker) -> None:
    first = new_task()
    broker.enqueue("default", [first])
    lease = reserved(broker)
    later = new_task()
    broker.enqueue("default", [later])
    retry = finish(lease, Outcome.RETRY, '{"x": 1}')._replace(retry_delay_ms=0)
    assert broker.finish(WORKER, [retry]) == []
    assert acquired_ids(broker) == [first.id, later.id]


def test_a_requeue_keeps_its_place(broker: Broker) -> None:
    first = new_task()
    broker.enqueue("default", [first])
    lease = reserved(broker)
    later = new_task()
    broker.enqueue("default", [later])
    assert broker.finish(WORKER, [finish(lease, Outcome.FAILED, '{"x": 1}')]) == []
    assert broker.requeue(first.id) == "requeued"
    assert acquired_ids(broker) == [first.id, later.id]


def test_past_one_step_of_enqueues_a_waiting_task_goes_before_the_next_priority_up(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """P:seq is one counter per queue: priority order holds between tasks enqueued fewer than
    PRIORITY_STEP enqueues apart; a task that waited longer goes before newer ones a priority
    above (docs/design.md, Rules of the Redis data model)."""
    old = new_task(priority=-1)
    broker.enqueue("default", [old])  # seq 1
    redis_client.set(keys.seq, PRIORITY_STEP - 1)
    within = new_task(priority=0)  # seq PRIORITY_STEP: fewer than a step of enqueues later
    broker.enqueue("default", [within])
    redis_client.set(keys.seq, PRIORITY_STEP + 1)
    beyond = new_task(priority=0)  # seq PRIORITY_STEP + 2: more than a step later
    broker.enqueue("default", [beyond])
    assert acquired_ids(broker) == [within.id, old.id, beyond.id]


def test_a_fifo_counter_set_by_hand_at_its_end_fails_enqueue_naming_the_key(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis, redis_url: str
) -> None:
    redis_client.set(keys.seq, 2**63 - 1)  # INCRBY would overflow: no counter we wrote
    task = new_task()
    message = (
        f"Redis at {redis_url} holds a value of the wrong kind in one of this backend's keys "
        f"(increment or decrement would overflow in {keys.seq}). Something other than "
        "django-threadmill wrote to it: delete that key, or give each project its own "
        "OPTIONS['key_prefix']."
    )
    with pytest.raises(BrokerUnavailable) as raised:
        broker.enqueue("default", [task])
    assert str(raised.value) == message
    assert not redis_client.exists(keys.record(task.id))


@pytest.mark.parametrize("score", NOT_FINITE)
def test_a_promoted_task_whose_score_is_no_finite_number_runs_at_the_lowest_priority(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis, score: str
) -> None:
    delayed = new_task(priority=100, run_after_ms=now_ms() + HOUR_MS)
    low, lowest = new_task(priority=-99), new_task(priority=-100)
    broker.enqueue("default", [delayed])
    broker.enqueue("default", [low, lowest])
    redis_client.hset(keys.record(delayed.id), "score", score)
    redis_client.zadd(keys.delayed, {delayed.id: 1}, xx=True)  # due now
    assert acquired_ids(broker) == [low.id, delayed.id, lowest.id]


@pytest.mark.parametrize("score", NOT_FINITE)
def test_a_requeued_task_whose_score_is_no_finite_number_is_ready_again(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis, score: str
) -> None:
    task, low = new_task(priority=100), new_task(priority=-99)
    broker.enqueue("default", [task])
    assert broker.finish(WORKER, [finish(reserved(broker), Outcome.FAILED, '{"x": 1}')]) == []
    broker.enqueue("default", [low])
    redis_client.hset(keys.record(task.id), "score", score)
    assert broker.requeue(task.id) == "requeued"
    assert acquired_ids(broker) == [low.id, task.id]


@pytest.mark.parametrize("score", NOT_FINITE)
def test_a_released_task_whose_score_is_no_finite_number_is_ready_again(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis, score: str
) -> None:
    task, low = new_task(priority=100), new_task(priority=-99)
    broker.enqueue("default", [task])
    lease = reserved(broker)
    broker.enqueue("default", [low])
    redis_client.hset(keys.record(task.id), "score", score)
    assert broker.release([lease]) == 1
    assert acquired_ids(broker) == [low.id, task.id]


def test_a_queue_found_empty_is_peeked_at_when_busy_queues_take_every_slot() -> None:
    plan = FetchPlan(("default", "emails"))
    plan.found("default", True)
    plan.found("emails", False)
    assert plan.counts(1, lambda queue: False) == {"default": 1, "emails": 0}

    plan.found("emails", True)  # the peek saw tasks there: the slots are shared in turn
    assert [plan.counts(1, lambda queue: False) for _ in range(2)] == [
        {"emails": 1},
        {"default": 1},
    ]


def test_a_trickle_queue_is_served_beside_a_busy_one_at_prefetch_1(
    redis_url: str, key_prefix: str, backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    busy = [work_for.enqueue(0.01) for _ in range(1000)]
    args = ("--threads", "1", "--prefetch", "1", "--queue", "default", "--queue", "emails")
    with running(worker(redis_url, key_prefix, *args)):
        wait_until(
            lambda: backend.get_result(busy[2].id).status == TaskResultStatus.SUCCESSFUL,
            "the busy queue's third task finished",
        )
        trickle = square_email.enqueue(3)
        wait_until(
            lambda: backend.get_result(trickle.id).status == TaskResultStatus.SUCCESSFUL,
            "the trickle queue's task finished",
        )
        # Before, it ran only once the busy queue ran dry.
        assert broker.client.zcard(broker.queue_keys("default").ready) > 0
