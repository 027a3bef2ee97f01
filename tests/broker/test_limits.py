"""acquire.lua and finish.lua with queue limits: concurrency against the leases, a start rate."""

import time
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Outcome
from django_threadmill.worker.reaper import reap_once
from tests.support import wait_until

from .conftest import fill, finish, start

LIMITS = {"reports": {"concurrency": 2}, "emails": {"rate": "10/s"}}
TOKEN_MS = 100  # "10/s"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": LIMITS}


def acquired_ids(broker: Broker, queue: str, count: int = 10) -> list[str]:
    return [r.lease.task_id for r in broker.acquire(queue, count).reservations]


def within_one_token[T](
    calls: Callable[[], T], broker: Broker, redis_client: redis.Redis, queue: str
) -> T:
    """Return what ``calls`` returned once they all ran within one token's interval: again,
    on an emptied ``queue``, while a loaded machine spread them wider (the next token or turn
    then came between two of them, and the test's premise did not hold)."""
    for _attempt in range(5):
        began = time.monotonic()
        outcome = calls()
        if time.monotonic() - began < TOKEN_MS / 1000:
            return outcome
        keys = redis_client.scan_iter(match=f"{broker.queue_keys(queue).prefix}*")
        redis_client.delete(*keys)
    pytest.fail("every try took longer than one token's interval: the machine was short of CPU")


def test_concurrency_caps_what_the_queue_holds_and_keeps_the_rest_in_order(
    broker: Broker, redis_client: redis.Redis
) -> None:
    ids = fill(broker, "reports", 5)
    first = broker.acquire("reports", 10)
    assert [r.lease.task_id for r in first.reservations] == ids[:2]
    assert first.held_back
    assert first.next_due_ms is None  # no time to wait for: a finish wakes the fetcher
    again = broker.acquire("reports", 10)
    assert (again.reservations, again.held_back) == ([], True)
    assert redis_client.zrange(broker.queue_keys("reports").ready, 0, -1) == ids[2:]


def test_a_finished_task_frees_its_slot_and_wakes_a_fetcher(
    broker: Broker, redis_client: redis.Redis
) -> None:
    ids = fill(broker, "reports", 3)
    wake = broker.queue_keys("reports").wake
    redis_client.delete(wake)
    first = broker.acquire("reports", 10).reservations[0]
    assert redis_client.llen(wake) == 0  # held back: no baton, or fetchers would spin
    broker.finish("w", [finish(first.lease, Outcome.FAILED, '{"e": 1}')])
    assert redis_client.llen(wake) == 1
    assert acquired_ids(broker, "reports") == [ids[2]]


def test_finish_wakes_no_one_when_nothing_waits(broker: Broker, redis_client: redis.Redis) -> None:
    fill(broker, "reports", 1)
    wake = broker.queue_keys("reports").wake
    [reservation] = broker.acquire("reports", 10).reservations
    redis_client.delete(wake)
    broker.finish("w", [finish(reservation.lease)])
    assert redis_client.llen(wake) == 0


def test_an_unlimited_queue_is_not_held_back(broker: Broker, redis_client: redis.Redis) -> None:
    fill(broker, "default", 3)
    acquired = broker.acquire("default", 10)
    assert (len(acquired.reservations), acquired.held_back) == (3, False)
    assert not redis_client.exists(broker.queue_keys("default").rate)


def test_a_limit_that_lets_everything_through_holds_nothing_back(broker: Broker) -> None:
    fill(broker, "reports", 2)
    acquired = broker.acquire("reports", 10)
    assert (len(acquired.reservations), acquired.held_back) == (2, False)


def test_reaped_leases_give_their_slots_back(
    broker: Broker, backend: object, redis_client: redis.Redis
) -> None:
    ids = fill(broker, "reports", 3)
    reserved, running = broker.acquire("reports", 10).reservations
    broker.start("w", [start(running.lease)])
    leases = broker.queue_keys("reports").leases
    redis_client.zadd(leases, {reserved.lease.task_id: 1, running.lease.task_id: 1}, xx=True)
    assert acquired_ids(broker, "reports") == []
    reap_once(backend)  # type: ignore[arg-type]
    assert acquired_ids(broker, "reports") == [ids[0], ids[2]]  # the reservation went back first


def test_rate_hands_out_one_token_and_says_when_the_next_comes(
    broker: Broker, redis_client: redis.Redis
) -> None:
    ids, first, second = within_one_token(
        lambda: (
            fill(broker, "emails", 3),
            broker.acquire("emails", 10),
            broker.acquire("emails", 10),
        ),
        broker,
        redis_client,
        "emails",
    )
    assert [r.lease.task_id for r in first.reservations] == ids[:1]
    assert (first.held_back, first.next_due_ms) == (True, TOKEN_MS)
    assert second.reservations == []
    assert second.held_back
    assert second.next_due_ms is not None
    assert 0 <= second.next_due_ms <= TOKEN_MS


def test_the_next_token_comes_after_its_interval(broker: Broker) -> None:
    ids = fill(broker, "emails", 2)
    assert acquired_ids(broker, "emails") == ids[:1]
    taken: list[str] = []
    wait_until(lambda: taken.extend(acquired_ids(broker, "emails")) or taken, "next token", 5)
    assert taken == ids[1:]


def test_a_token_awaited_under_a_slower_rate_comes_within_the_current_interval(
    broker: Broker, redis_client: redis.Redis
) -> None:
    ids = fill(broker, "emails", 1)
    seconds, micros = redis_client.time()
    an_hour_on = seconds * 1000 + micros // 1000 + 3_600_000  # the next token under "1/h"
    redis_client.set(broker.queue_keys("emails").rate, an_hour_on)
    held = broker.acquire("emails", 10)
    assert held.reservations == []
    assert held.next_due_ms is not None
    assert 0 <= held.next_due_ms <= TOKEN_MS
    taken: list[str] = []
    wait_until(lambda: taken.extend(acquired_ids(broker, "emails")) or taken, "next token", 5)
    assert taken == ids


def test_starts_take_turns_one_interval_apart(broker: Broker, redis_client: redis.Redis) -> None:
    turn, *waits = within_one_token(
        lambda: [broker.start_turn("emails") for _ in range(4)], broker, redis_client, "emails"
    )
    assert turn == 0
    assert all(0 < wait <= TOKEN_MS for wait in waits)  # no turn taken: each only waits
    turns: list[int] = []
    wait_until(lambda: turns.append(broker.start_turn("emails")) or turns[-1] == 0, "turn", 5)
    assert broker.start_turn("default") == 0  # a queue without a rate: no call, no key
    assert not redis_client.exists(broker.queue_keys("default").paced)


def test_a_start_turn_put_off_by_a_slower_rate_comes_within_the_current_interval(
    broker: Broker, redis_client: redis.Redis
) -> None:
    seconds, micros = redis_client.time()
    an_hour_on = seconds * 1000 + micros // 1000 + 3_600_000  # the next start under "1/h"
    redis_client.set(broker.queue_keys("emails").paced, an_hour_on)
    assert 0 < broker.start_turn("emails") <= TOKEN_MS
    turns: list[int] = []
    wait_until(lambda: turns.append(broker.start_turn("emails")) or turns[-1] == 0, "turn", 5)


def test_an_unused_token_is_kept_for_later(broker: Broker, redis_client: redis.Redis) -> None:
    assert broker.acquire("emails", 10).reservations == []
    assert not redis_client.exists(broker.queue_keys("emails").rate)
    fill(broker, "emails", 1)
    assert len(acquired_ids(broker, "emails")) == 1
