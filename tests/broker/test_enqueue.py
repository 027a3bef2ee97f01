"""enqueue.lua: store new tasks ready or delayed, register the queue, push wake tokens."""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.enqueue import WAKE_TOKEN_CAP
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.times import now_ms

from .conftest import new_task

PRIORITY_STEP = 2**40  # score distance between two neighbouring priorities


def test_enqueue_stores_a_ready_record(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = new_task()
    before_ms = broker.server_time_ms()
    assert broker.enqueue("default", [task]).stored == 1
    record = redis_client.hgetall(keys.record(task.id))
    # Stamped by the script on the Redis clock (docs/design.md, One clock).
    assert int(record["enqueued_ms"]) >= before_ms
    assert record == {
        "payload": task.payload,
        "state": "ready",
        "score": str(100 * PRIORITY_STEP + 1),
        "token": "0",
        "enqueued_ms": record["enqueued_ms"],
        "run_after_ms": "",
        "nerrors": "0",
    }
    assert redis_client.zrange(keys.ready, 0, -1, withscores=True) == [
        (task.id, 100 * PRIORITY_STEP + 1)
    ]
    assert redis_client.zcard(keys.delayed) == 0


def test_pending_record_never_expires(
    enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = enqueue()
    assert redis_client.pttl(keys.record(task.id)) == -1


def test_first_enqueue_registers_the_queue(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    assert broker.queues() == []
    enqueue("emails")
    enqueue("default")
    assert broker.queues() == ["default", "emails"]


def test_future_run_after_goes_to_delayed(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    due_ms = now_ms() + 3_600_000
    task = new_task(run_after_ms=due_ms)
    broker.enqueue("default", [task])
    assert redis_client.zrange(keys.delayed, 0, -1, withscores=True) == [(task.id, due_ms)]
    assert redis_client.zcard(keys.ready) == 0
    assert redis_client.hget(keys.record(task.id), "run_after_ms") == str(due_ms)


def test_past_run_after_goes_to_ready(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = new_task(run_after_ms=now_ms() - 1000)
    broker.enqueue("default", [task])
    assert redis_client.zrange(keys.ready, 0, -1) == [task.id]
    assert redis_client.zcard(keys.delayed) == 0


def test_score_orders_priority_then_arrival(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    low, high, low_again = new_task(priority=-5), new_task(priority=7), new_task(priority=-5)
    assert broker.enqueue("default", [low, high, low_again]).stored == 3
    scores = dict(redis_client.zrange(keys.ready, 0, -1, withscores=True))
    assert scores == {
        high.id: 93 * PRIORITY_STEP + 2,
        low.id: 105 * PRIORITY_STEP + 1,
        low_again.id: 105 * PRIORITY_STEP + 3,
    }


def test_extreme_priorities_keep_exact_scores(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    top, bottom = new_task(priority=100), new_task(priority=-100)
    broker.enqueue("default", [top, bottom])
    assert redis_client.zscore(keys.ready, top.id) == 1
    assert redis_client.zscore(keys.ready, bottom.id) == 200 * PRIORITY_STEP + 2


def test_an_existing_id_is_skipped_so_a_retried_enqueue_is_idempotent(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    existing = new_task()
    broker.enqueue("default", [existing])
    redis_client.hset(keys.record(existing.id), "state", "running")
    fresh = new_task()
    assert broker.enqueue("default", [fresh, existing]).stored == 1
    assert redis_client.hget(keys.record(existing.id), "state") == "running"
    assert redis_client.zrange(keys.ready, 0, -1) == [existing.id, fresh.id]


def test_wake_tokens_are_capped(broker: Broker, keys: QueueKeys, redis_client: redis.Redis) -> None:
    broker.enqueue("default", [new_task()])
    assert redis_client.llen(keys.wake) == 1
    broker.enqueue("default", [new_task() for _ in range(WAKE_TOKEN_CAP + 5)])
    assert redis_client.llen(keys.wake) == WAKE_TOKEN_CAP


def test_record_keys_share_the_queue_hash_tag(
    enqueue: Callable[..., NewTask], redis_client: redis.Redis, key_prefix: str
) -> None:
    task = enqueue("emails")
    written = set(redis_client.scan_iter(f"{key_prefix}:*"))
    assert written == {
        f"{key_prefix}:{{default}}:queues",
        f"{key_prefix}:{{default:emails}}:t:{task.id}",
        f"{key_prefix}:{{default:emails}}:ready",
        f"{key_prefix}:{{default:emails}}:seq",
        f"{key_prefix}:{{default:emails}}:wake",
    }


async def test_aenqueue_stores_the_same_record(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = new_task()
    assert (await broker.aenqueue("default", [task])).stored == 1
    assert redis_client.hget(keys.record(task.id), "payload") == task.payload
    assert redis_client.zrange(keys.ready, 0, -1) == [task.id]
    assert broker.queues() == ["default"]
