"""Queue limits beside damaged records: a record set aside gives back the place it took.

A damaged record popped under a concurrency limit took a slot it never used. The acquire reply
still said the limit held the tasks left back, so an idle worker waited for a finish's wake
token (up to its longest block, IDLE_BLOCK_S) with the slot free and a task ready.
"""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker
from tests.broker.conftest import fill

LIMITS = {"reports": {"concurrency": 2}, "emails": {"rate": "10/s"}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": LIMITS}


def no_payload(client: redis.Redis, key: str) -> None:
    """Damage the record so that acquire.lua sets it aside."""
    client.hdel(key, "payload")


def payload_not_utf8(client: redis.Redis, key: str) -> None:
    """Damage the record so that the worker sets it aside once acquire answered."""
    client.hset(key, "payload", b'{"path":"\xff\xfe"}')


@pytest.mark.parametrize("damage", [no_payload, payload_not_utf8])
@pytest.mark.parametrize("queue", ["reports", "emails"])
def test_a_record_set_aside_in_a_limits_place_leaves_it_to_the_next_task_at_once(
    broker: Broker,
    redis_client: redis.Redis,
    damage: Callable[[redis.Redis, str], None],
    queue: str,
) -> None:
    keys = broker.queue_keys(queue)
    damaged, *good = fill(broker, queue, 3)
    damage(redis_client, keys.record(damaged))
    first = broker.acquire(queue, 10)
    assert set(redis_client.hkeys(keys.damaged)) == {damaged}
    assert not redis_client.zscore(keys.leases, damaged)  # its slot is given back
    if queue == "reports":  # a slot is still free: nothing is held back, look again now
        assert [r.lease.task_id for r in first.reservations] == good[:1]
        assert (first.held_back, first.next_due_ms) == (False, 0)
        again = broker.acquire(queue, 10)
        assert [r.lease.task_id for r in again.reservations] == good[1:]
    elif damage is no_payload:  # the token was not used: the next task takes it now
        assert (first.reservations, first.held_back, first.next_due_ms) == ([], False, 0)
        again = broker.acquire(queue, 10)
        assert [r.lease.task_id for r in again.reservations] == good[:1]
    else:  # reserved and answered, the damaged task used the token: the next one waits
        assert (first.reservations, first.held_back, first.by_rate) == ([], True, True)
        assert (first.next_due_ms or 0) > 0
