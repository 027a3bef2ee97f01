"""Paths that free a slot of a queue at its concurrency limit wake an idle fetcher, as a finish
does; and queue limits that would limit nothing are refused, naming the key.

acquire.lua holds a limited queue's ready tasks back without passing a baton: an idle worker
then blocks until a wake token says a slot is free. A finish pushes one; the rare paths that
drop a lease entry without a finish (a damaged record at start, renew or release, a record set
aside after acquire, a lease the reaper drops as a ghost or sets aside) pushed none, and the
worker slept up to its longest block (IDLE_BLOCK_S) with the slot free and a task ready.
"""

from collections.abc import Callable

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.broker import Ack, Broker, Lease, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.conf.settings import read_settings
from tests.broker.conftest import WORKER, fill

from .test_limit_slots_at_the_edges import payload_not_utf8

QUEUE = "reports"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {QUEUE: {"concurrency": 1}}}


@pytest.fixture
def held(broker: Broker, redis_client: redis.Redis) -> tuple[Lease, str]:
    """The queue's one slot held by a reserved task, a second task held back by the limit,
    and no wake token left (the fetcher that blocks took enqueue's); return the lease and the
    waiting task's id."""
    held_id, waiting = fill(broker, QUEUE, 2)
    acquired = broker.acquire(QUEUE, 5)
    assert [r.lease.task_id for r in acquired.reservations] == [held_id]
    assert acquired.held_back
    redis_client.delete(broker.queue_keys(QUEUE).wake)
    return acquired.reservations[0].lease, waiting


def gone(client: redis.Redis, key: str) -> None:
    """Delete the record: its lease entry is a ghost."""
    client.delete(key)


def unreadable(client: redis.Redis, key: str) -> None:
    """Make the record a key of another type: it cannot be read, so it is set aside."""
    client.delete(key)
    client.set(key, "not a hash")


def reaped(broker: Broker, client: redis.Redis, lease: Lease) -> None:
    client.zadd(broker.queue_keys(QUEUE).leases, {lease.task_id: 1}, xx=True)  # expired
    assert broker.reap(QUEUE, 100).released == []


def started(broker: Broker, client: redis.Redis, lease: Lease) -> None:
    [rejected] = broker.start(WORKER, [Start(lease=lease, started_ms=now_ms())])
    assert rejected.ack is Ack.DAMAGED


def renewed(broker: Broker, client: redis.Redis, lease: Lease) -> None:
    assert broker.renew(WORKER, [lease]) == [lease.task_id]


def released(broker: Broker, client: redis.Redis, lease: Lease) -> None:
    assert broker.release([lease]) == 0


type Damage = Callable[[redis.Redis, str], None]
type Drop = Callable[[Broker, redis.Redis, Lease], None]


@pytest.mark.parametrize(
    ("damage", "drop"),
    [
        (gone, reaped),
        (unreadable, reaped),
        (unreadable, started),
        (unreadable, renewed),
        (unreadable, released),
    ],
    ids=["reaper drops a ghost", "reaper sets aside", "start", "renew", "release"],
)
def test_a_lease_dropped_without_a_finish_wakes_a_fetcher_for_the_free_slot(
    broker: Broker,
    redis_client: redis.Redis,
    held: tuple[Lease, str],
    damage: Damage,
    drop: Drop,
) -> None:
    lease, waiting = held
    keys = broker.queue_keys(QUEUE)
    damage(redis_client, keys.record(lease.task_id))
    drop(broker, redis_client, lease)
    assert redis_client.zscore(keys.leases, lease.task_id) is None  # the slot is free
    assert redis_client.lrange(keys.wake, 0, -1) == ["1"]
    assert [r.lease.task_id for r in broker.acquire(QUEUE, 5).reservations] == [waiting]


def test_a_record_set_aside_after_acquire_wakes_a_fetcher_for_the_free_slot(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """The caller looks again itself; but another acquire may have run between its acquire
    and the set-aside call and found the slot taken, and its worker blocks for a token."""
    keys = broker.queue_keys(QUEUE)
    damaged, waiting = fill(broker, QUEUE, 2)
    payload_not_utf8(redis_client, keys.record(damaged))
    redis_client.delete(keys.wake)
    acquired = broker.acquire(QUEUE, 5)
    assert acquired.reservations == []
    assert redis_client.hkeys(keys.damaged) == [damaged]
    assert redis_client.lrange(keys.wake, 0, -1) == ["1"]
    assert [r.lease.task_id for r in broker.acquire(QUEUE, 5).reservations] == [waiting]


def test_a_queue_without_a_concurrency_limit_gets_no_wake_token_for_a_ghost(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """A queue without a limit passes its baton in acquire: a dropped lease frees nothing."""
    keys = broker.queue_keys("default")
    fill(broker, "default", 2)
    [reservation] = broker.acquire("default", 1).reservations
    redis_client.delete(keys.wake, keys.record(reservation.lease.task_id))
    redis_client.zadd(keys.leases, {reservation.lease.task_id: 1}, xx=True)
    assert broker.reap("default", 100).looked_at == 1
    assert redis_client.llen(keys.wake) == 0


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (
            {"concurrency": None},
            r"^OPTIONS\['queue_limits'\]\['reports'\]\['concurrency'\] is None\. Use a positive "
            r"whole number: .*; leave 'concurrency' out for no limit\.$",
        ),
        (
            {"rate": None, "concurrency": 2},
            r"^OPTIONS\['queue_limits'\]\['reports'\]\['rate'\] is None\. Use 'N/s', 'N/m' or "
            r"'N/h' .*; leave 'rate' out for no limit\.$",
        ),
        (
            {"concurency": 2},
            r"^OPTIONS\['queue_limits'\]\['reports'\]\['concurency'\] is not a limit\. The "
            r"limits are 'concurrency' and 'rate': rename or remove it, e\.g\. "
            r"\{'concurrency': 2, 'rate': '600/m'\}\.$",
        ),
        (
            {"rate": "1/s", "a": 1, "b": 2},
            r"^OPTIONS\['queue_limits'\]\['reports'\]\['a'\], "
            r"OPTIONS\['queue_limits'\]\['reports'\]\['b'\] are not limits\. .* remove them,",
        ),
    ],
    ids=["concurrency None", "rate None", "unknown key", "unknown keys"],
)
def test_limits_that_would_limit_nothing_name_the_key_and_the_fix(
    limit: dict[str, object], message: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        read_settings("default", {"OPTIONS": {"queue_limits": {QUEUE: limit}}})
