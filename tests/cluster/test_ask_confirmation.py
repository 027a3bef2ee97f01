"""A confirmed write into a slot being migrated is refused, never confirmed by the wrong node.

The queue's slot is put in migrating/importing state by hand (CLUSTER SETSLOT), as
``redis-cli --cluster reshard`` does. The owner answers ASK for keys it does not hold, but the
importing node answers TRYAGAIN to a multi-key call unless it holds every key, and each script
names key prefixes (``P:t:``, ``P:u:``) that never exist as keys: so no script runs on the
importing node, where the pipeline's WAIT (sent to the owner) would not cover it.
"""

from collections.abc import Iterator

import pytest
import redis
from redis.crc import key_slot

from django_threadmill.broker import Broker, Enqueued
from django_threadmill.broker.scripts import ScriptName, script_source
from django_threadmill.exceptions import BrokerUnavailable
from tests.backend_support import new_task
from tests.servers.redis_cluster import LocalCluster

QUEUE = "images"


def primary_ids(cluster: LocalCluster, key: str) -> tuple[redis.Redis, redis.Redis]:
    """Return a client of ``key``'s primary and of another primary."""
    owner_node = cluster.primary_for(key)
    others = (redis.Redis(port=node.port, decode_responses=True) for node in cluster.live())
    target = next(
        c for c in others if c.info("replication")["role"] == "master" and
        c.connection_pool.connection_kwargs["port"] != owner_node.port
    )  # fmt: skip
    return redis.Redis(port=owner_node.port, decode_responses=True), target


@pytest.fixture
def migrating(cluster: LocalCluster, broker: Broker) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    """Start moving the queue's slot from its primary to another; finish the move after."""
    key = broker.queue_keys(QUEUE).ready
    slot = key_slot(key.encode())
    owner, target = primary_ids(cluster, key)
    owner_id, target_id = (node.execute_command("CLUSTER MYID") for node in (owner, target))
    target.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", owner_id)
    owner.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target_id)
    yield owner, target
    for node in (target, owner):
        node.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)


def test_an_enqueue_into_a_migrating_slot_is_refused_and_writes_nowhere(
    broker: Broker, migrating: tuple[redis.Redis, redis.Redis]
) -> None:
    owner, target = migrating
    task = new_task(QUEUE)
    [outcome] = broker.enqueue_groups({QUEUE: [task]})
    assert isinstance(outcome, BrokerUnavailable)
    assert "cannot serve this call now" in str(outcome)
    slot = key_slot(broker.queue_keys(QUEUE).ready.encode())
    counts = [node.execute_command("CLUSTER COUNTKEYSINSLOT", slot) for node in (owner, target)]
    assert counts == [0, 0]


def test_once_the_slot_has_moved_the_retried_enqueue_is_confirmed_by_its_new_owner(
    broker: Broker, migrating: tuple[redis.Redis, redis.Redis]
) -> None:
    owner, target = migrating
    # The client reads the slot map now (the old owner's), and the script is put in every
    # primary's cache (a bare SCRIPT LOAD), so the redirected call runs rather than meeting
    # NOSCRIPT, which would send it again, confirmed by its new owner.
    broker.enqueue("billing", [new_task("billing")])
    broker.client.script_load(script_source(ScriptName.ENQUEUE))
    broker.register_queues([QUEUE])
    slot = key_slot(broker.queue_keys(QUEUE).ready.encode())
    target_id = target.execute_command("CLUSTER MYID")
    for node in (target, owner):
        node.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)
    task = new_task(QUEUE)
    # The first call meets MOVED: redis-py follows it, but the WAIT went to the old owner, so
    # the confirmation is refused (calls.py); the retry goes to the new owner with its WAIT.
    outcomes = [broker.enqueue_groups({QUEUE: [task]})[0] for _ in range(2)]
    assert isinstance(outcomes[0], BrokerUnavailable)
    assert "its slot moved from" in str(outcomes[0])
    assert outcomes[1] == Enqueued(stored=0, existing={})  # the first call had stored it
    assert target.execute_command("CLUSTER COUNTKEYSINSLOT", slot) > 0
