"""A sharded queue on a Redis Cluster whose write one node does not confirm: those shards' tasks
may be stored, so no error says they were not.

The node's replica is stopped (SIGSTOP), so its primary runs the script but its WAIT times out:
the tasks of that node's shards are in Redis, unconfirmed, while the other nodes confirm theirs.
"""

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult
from django_threadmill.exceptions import MaybeApplied, PartlyEnqueued
from testproject.example.tasks import echo
from tests.servers.redis_cluster import LocalCluster, info
from tests.servers.redis_server import RedisProcess

SHARDS = 6
CALLS = 30  # enough that every node holds some of the call's shards


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {
        "cluster": True,
        "durability": "replicated",
        # The other nodes' replicas must confirm within it: 0.3 s was missed once on a loaded
        # machine, which named a confirmed node's tasks as maybe stored. The stopped one costs it.
        "durability_timeout": 2.0,
        "queue_shards": {"default": SHARDS},
    }


@pytest.fixture
def unconfirmed_node(cluster: LocalCluster, broker: Broker) -> Iterator[RedisProcess]:
    """Stop the replica of the primary of the queue's first shard; yield that primary."""
    broker.register_queues(["default"])
    primary = cluster.primary_for(broker.queue_keys(broker.parts("default")[0]).ready)
    replica_port = int(info(primary, "replication")["slave0"]["port"])  # type: ignore[index]
    replica = next(node for node in cluster.nodes if node.port == replica_port)
    assert replica.process is not None
    os.kill(replica.process.pid, signal.SIGSTOP)
    try:
        yield primary
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)


def on_node(cluster: LocalCluster, broker: Broker, node: RedisProcess, task_id: str) -> bool:
    shard = broker.part_in("default", task_id)
    return cluster.primary_for(broker.queue_keys(shard).ready) is node


def test_enqueue_many_names_the_tasks_that_may_be_stored_apart_from_those_that_were(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, unconfirmed_node: RedisProcess
) -> None:
    with pytest.raises(PartlyEnqueued) as raised:
        backend.enqueue_many(echo, [((n,), {}) for n in range(CALLS)])
    error = raised.value
    assert error.written
    assert error.maybe_written
    assert all(
        not on_node(cluster, backend.broker, unconfirmed_node, task_id) for task_id in error.written
    )
    assert all(
        on_node(cluster, backend.broker, unconfirmed_node, task_id)
        for task_id in error.maybe_written
    )
    assert len(error.written) + len(error.maybe_written) == CALLS
    # They were stored: enqueuing them again as "not written" would run them twice.
    assert all(backend.get_result(task_id) for task_id in error.maybe_written)
    message = str(error)
    assert f"{len(error.written)} of the {CALLS} tasks for sharded queue 'default' were " in message
    assert f"{len(error.maybe_written)} may have been (their ids are in this error's " in message
    assert "the others were not" not in message


def test_coalesced_callers_of_an_unconfirmed_shard_are_told_their_task_may_be_stored(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, unconfirmed_node: RedisProcess
) -> None:
    async def together() -> list[TaskResult | BaseException]:
        # Called before the loop runs the flusher: one batch, spanning every node's shards.
        return await asyncio.gather(
            *(echo.aenqueue(n) for n in range(CALLS)), return_exceptions=True
        )

    outcomes = asyncio.run(together())
    maybe = [outcome for outcome in outcomes if isinstance(outcome, MaybeApplied)]
    results = [outcome for outcome in outcomes if isinstance(outcome, TaskResult)]
    assert maybe
    assert results
    assert len(maybe) + len(results) == CALLS
    for error in maybe:
        [task_id] = error.task_ids
        assert on_node(cluster, backend.broker, unconfirmed_node, task_id)
        assert f"Task {task_id!r} may be stored: check get_result(" in str(error)
        assert backend.get_result(task_id).args == [outcomes.index(error)]
    assert all(
        not on_node(cluster, backend.broker, unconfirmed_node, result.id) for result in results
    )
