"""Pause and resume a queue: acquire hands out nothing, enqueue still stores, resume wakes."""

import threading
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.enqueue import WAKE_TOKEN_CAP
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.pausing import QueuePause
from django_threadmill.codec.times import now_ms
from tests.support import wait_until

from .conftest import new_task

HOUR_MS = 3_600_000


def test_a_paused_queue_hands_out_nothing_and_answers_as_an_empty_one(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    waiting = [enqueue().id for _ in range(3)]
    assert broker.pause("default", "ada in the admin", "deploying")

    acquired = broker.acquire("default", 10)

    assert acquired.reservations == []
    assert acquired.next_due_ms is None  # the worker blocks on the wake list ...
    assert acquired.held_back is False  # ... and holds nothing back to look at again
    assert redis_client.zrange(keys.ready, 0, -1) == waiting
    assert redis_client.zcard(keys.leases) == 0


def test_a_paused_queue_promotes_nothing_until_it_is_resumed(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    ready = enqueue(priority=0)
    due = enqueue(priority=10, run_after_ms=now_ms() + HOUR_MS)
    redis_client.zadd(keys.delayed, {due.id: 1}, xx=True)  # came due while paused
    enqueue(run_after_ms=now_ms() + HOUR_MS)  # not due: its time is not reported either
    broker.pause("default", "test")

    assert broker.acquire("default", 10).next_due_ms is None
    assert redis_client.zscore(keys.delayed, due.id) == 1

    broker.resume("default", "test")
    taken = [r.lease.task_id for r in broker.acquire("default", 10).reservations]
    assert taken == [due.id, ready.id]  # promoted in priority order, as always


def test_enqueue_still_stores_tasks_in_a_paused_queue(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.pause("default", "test")
    task = new_task()
    assert broker.enqueue("default", [task]).stored == 1
    assert redis_client.zrange(keys.ready, 0, -1) == [task.id]
    assert broker.record(task.id)["state"] == "ready"  # type: ignore[index]


def test_only_the_paused_queue_stops(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    email = enqueue("emails")
    enqueue("default")
    broker.pause("default", "test")
    default, emails = broker.acquire_from({"default": 5, "emails": 5})
    assert default.reservations == []
    assert [r.lease.task_id for r in emails.reservations] == [email.id]


def test_pausing_twice_keeps_the_first_pause(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    before_ms = broker.server_time_ms()
    assert broker.pause("default", "ada in the admin", "deploy: step 1") is True
    first = redis_client.get(keys.paused)
    assert broker.pause("default", "bob with manage.py threadmill_queue", "again") is False
    assert redis_client.get(keys.paused) == first
    pause = Inspector(broker).paused(["default", "emails"])
    assert list(pause) == ["default"]
    assert pause["default"].by == "ada in the admin"
    assert pause["default"].reason == "deploy: step 1"  # a ": " in the reason stays in it
    assert pause["default"].at_ms is not None
    assert before_ms <= pause["default"].at_ms <= broker.server_time_ms()


def test_resume_lifts_the_pause_once(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    assert broker.resume("default", "test") is False  # never paused
    broker.pause("default", "test")
    assert broker.resume("default", "test") is True
    assert not redis_client.exists(keys.paused)
    assert broker.resume("default", "test") is False
    task = enqueue()
    assert [r.lease.task_id for r in broker.acquire("default", 5).reservations] == [task.id]


@pytest.mark.parametrize(
    ("ready", "tokens_before", "tokens_after"),
    [
        (0, 0, 1),  # one, for delayed tasks that came due meanwhile
        (3, 0, 3),  # one per READY task ...
        (40, 0, WAKE_TOKEN_CAP),  # ... up to the cap enqueue keeps
        (40, WAKE_TOKEN_CAP - 2, WAKE_TOKEN_CAP),
        (40, WAKE_TOKEN_CAP, WAKE_TOKEN_CAP),
    ],
)
def test_resume_pushes_a_wake_token_per_ready_task_up_to_the_cap(
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    ready: int,
    tokens_before: int,
    tokens_after: int,
) -> None:
    if ready:
        broker.enqueue("default", [new_task() for _ in range(ready)])
    redis_client.delete(keys.wake)
    if tokens_before:
        redis_client.rpush(keys.wake, *[1] * tokens_before)
    broker.pause("default", "test")
    broker.resume("default", "test")
    assert redis_client.llen(keys.wake) == tokens_after


def test_resume_of_a_queue_not_paused_pushes_no_token(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.resume("default", "test")
    assert redis_client.llen(keys.wake) == 0


def test_resume_wakes_a_fetcher_blocked_on_the_paused_queue(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.pause("default", "test")
    task = enqueue()
    redis_client.delete(keys.wake)  # the enqueue's token woke an idle worker, which found nothing
    woken: list[bool] = []
    fetcher = threading.Thread(
        target=lambda: woken.append(broker.wait_for_work(["default"], "worker-a", 60)),
        name="test-fetcher",
    )
    blocked_before = int(redis_client.info("clients")["blocked_clients"])
    fetcher.start()
    try:
        wait_until(
            lambda: int(redis_client.info("clients")["blocked_clients"]) > blocked_before,
            "the fetcher blocking in BLPOP",
        )
        broker.resume("default", "test")
    finally:
        fetcher.join(30)
    assert woken == [True]  # a token, not its 60 s timeout
    assert [r.lease.task_id for r in broker.acquire("default", 5).reservations] == [task.id]


def test_a_pause_survives_a_new_broker(broker: Broker, enqueue: Callable[..., NewTask]) -> None:
    """A worker restart builds a new Broker: the pause is in Redis, not in a process."""
    enqueue()
    broker.pause("default", "test")
    assert Broker(broker.settings).acquire("default", 5).reservations == []


def test_a_paused_key_written_by_hand_pauses_and_says_what_it_holds(
    broker: Broker, enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    enqueue()
    redis_client.set(keys.paused, "maintenance")
    assert Inspector(broker).paused(["default"])["default"] == QueuePause(
        at_ms=None, by="", reason="maintenance"
    )
    redis_client.delete(keys.paused)
    redis_client.rpush(keys.paused, "x")
    assert broker.acquire("default", 5).reservations == []
    [pause] = Inspector(broker).paused(["default"]).values()
    assert pause.reason.startswith("its key holds no string (WRONGTYPE")
    assert broker.resume("default", "test") is True  # DEL lifts it whatever its type
