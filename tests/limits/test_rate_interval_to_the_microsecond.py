"""rate "750/s": starts one every 1.334 ms, not every 2 ms (500/s) as whole milliseconds did."""

from itertools import pairwise

import pytest
import redis

from django_threadmill.broker import Broker
from tests.broker.conftest import fill, redis_now_ms
from tests.support import wait_until

INTERVAL_US = 1334  # "750/s": 1,000,000 µs / 750, rounded up (never faster than asked)
AN_HOUR_MS = 3_600_000


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {"emails": {"rate": "750/s"}}}


def redis_now_us(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return seconds * 1_000_000 + micros


def test_a_start_turn_comes_one_exact_interval_on(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """A turn put off for longer than one interval (stored in whole ms, as earlier versions
    wrote it) is brought to one interval from now: the wait said is that interval, to the µs."""
    paced = broker.queue_keys("emails").paced
    redis_client.set(paced, redis_now_ms(redis_client) + AN_HOUR_MS)
    assert broker.start_turn("emails") == INTERVAL_US / 1000  # was 2 ms


def test_turns_are_handed_out_an_interval_apart_to_the_microsecond(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """Each turn taken schedules the next one interval after the Redis time it was taken at."""
    paced = broker.queue_keys("emails").paced
    redis_client.set(paced, redis_now_ms(redis_client) - 1)  # whole ms: an earlier version's
    scheduled: list[int] = []
    for _ in range(5):
        before = redis_now_us(redis_client)
        wait_until(lambda: broker.start_turn("emails") == 0, "a start turn", 5)
        after = redis_now_us(redis_client)
        stored = redis_client.get(paced)
        assert stored is not None
        next_us = round(float(stored) * 1000)
        assert before + INTERVAL_US <= next_us <= after + INTERVAL_US  # was a whole ms later
        scheduled.append(next_us)
    gaps = [later - earlier for earlier, later in pairwise(scheduled)]
    assert min(gaps) >= INTERVAL_US  # never faster than asked


def test_a_reservation_token_due_within_the_millisecond_is_looked_for_at_once(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """The acquire reply rounds the wait for the next token down: rounded up to whole ms, a
    fetcher came back up to a millisecond late for every token."""
    fill(broker, "emails", 3)
    first = broker.acquire("emails", 10)
    assert len(first.reservations) == 1
    assert (first.held_back, first.next_due_ms) == (True, 1)  # the token in 1.334 ms; was 2
    rate = broker.queue_keys("emails").rate
    redis_client.set(rate, redis_now_ms(redis_client) + AN_HOUR_MS)  # put off by a slower rate
    before = redis_now_us(redis_client)
    held = broker.acquire("emails", 10)
    after = redis_now_us(redis_client)
    assert (held.reservations, held.held_back, held.next_due_ms) == ([], True, 1)
    stored = redis_client.get(rate)
    assert stored is not None
    assert before + INTERVAL_US <= round(float(stored) * 1000) <= after + INTERVAL_US
