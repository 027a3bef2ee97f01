"""A record whose ``state`` was written by hand (``HSET … state BANANA``) or deleted is damage:
the script that meets it sets it aside saying which, and handles the others as usual.

The reaper dropped such a leased record as a ghost, a record gone or settled: it stayed out of
every index for good, its task neither run nor settled, and nothing said so (docs/lifecycle.md,
Damaged records). acquire set a ready record without a ``state`` aside as "without a record".
"""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Lease, NewTask
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, start

# How the state is damaged: the value written, None for the field deleted; the reason given.
DAMAGE = [("BANANA", "in state BANANA"), (None, "without a state field")]


def damage_state(client: redis.Redis, key: str, value: str | None) -> None:
    if value is None:
        assert client.hdel(key, "state") == 1
    else:
        client.hset(key, "state", value)


def reason(client: redis.Redis, keys: QueueKeys, task_id: str) -> str:
    """The reason ``task_id`` was set aside for, without the time it was."""
    note = client.hget(keys.damaged, task_id)
    assert note is not None, f"{task_id} was not set aside"
    return note.split(" ", 1)[1]


@pytest.mark.parametrize(("value", "said"), DAMAGE)
@pytest.mark.parametrize("held", ["reserved", "running"])
def test_the_reaper_sets_aside_a_leased_record_in_a_state_no_script_writes(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
    held: str,
    value: str | None,
    said: str,
) -> None:
    damaged, good = reserve(), reserve()
    if held == "running":
        assert broker.start(WORKER, [start(damaged), start(good)]) == []
    damage_state(redis_client, keys.record(damaged.task_id), value)
    expire_lease(damaged.task_id)
    expire_lease(good.task_id)

    reaped = broker.reap("default", 100)

    assert reason(redis_client, keys, damaged.task_id) == f"reap: in the leases index {said}"
    assert reaped.set_aside == 1
    settled = [e.lease.task_id for e in reaped.expired] + reaped.released
    assert settled == [good.task_id]
    assert redis_client.zscore(keys.leases, damaged.task_id) is None


def test_the_reaper_still_drops_a_lease_whose_record_is_gone_unsaid(
    broker: Broker,
    reserve: Callable[[], Lease],
    expire_lease: Callable[[str], None],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    lease = reserve()
    redis_client.delete(keys.record(lease.task_id))
    expire_lease(lease.task_id)

    reaped = broker.reap("default", 100)

    assert (reaped.set_aside, reaped.released, reaped.expired) == (0, [], [])
    assert redis_client.zcard(keys.leases) == 0
    assert not redis_client.exists(keys.damaged)


def test_acquire_says_a_ready_record_has_no_state_field_not_that_it_has_no_record(
    broker: Broker,
    enqueue: Callable[..., NewTask],
    keys: QueueKeys,
    redis_client: redis.Redis,
) -> None:
    damaged, good = enqueue(), enqueue()
    damage_state(redis_client, keys.record(damaged.id), None)

    reserved = broker.acquire("default", 2).reservations

    assert [r.lease.task_id for r in reserved] == [good.id]
    assert reason(redis_client, keys, damaged.id) == (
        "acquire: in the ready index without a state field"
    )
