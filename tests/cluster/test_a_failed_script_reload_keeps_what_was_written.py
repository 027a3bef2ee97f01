"""A batch whose reload after NOSCRIPT failed still says what its first round wrote.

A primary freshly promoted from a replica lacks the scripts: its calls meet NOSCRIPT and are
sent again, as EVAL. With that primary unreachable by then (gone again, with its replica), the
whole batch raised "nothing was written" while the other primaries had stored their share: a
caller who retried stored those tasks twice under new ids, and a worker's acquire left the
tasks it had reserved there to nobody.
"""

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Enqueued, NewTask
from django_threadmill.broker.keys import shard_of
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied, PartlyEnqueued
from testproject.example.tasks import echo
from tests.broker.conftest import new_task
from tests.servers.redis_cluster import LocalCluster, info
from tests.servers.redis_server import RedisProcess

from .conftest import cluster_serving_with_a_primary_down

SHARDS = 3  # "reports" is split in three: a shard on each primary

type Outcomes = list[Enqueued | BrokerUnavailable]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A cluster of this module's own, whose primaries serve their slots while another is
    down: its tests take a primary away with its replica, so that no failover follows."""
    with cluster_serving_with_a_primary_down() as created:
        yield created


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "durability": "replicated", "queue_shards": {"reports": SHARDS}}


class Outage:
    """Flush one primary's scripts, and take it away (SIGKILL, with its replica) as the
    client opens its second pipeline: after the batch's first round, before its second."""

    def __init__(self, cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cluster, self.monkeypatch = cluster, monkeypatch
        self.killed: list[RedisProcess] = []

    def arm(self, client: Any, flushed: RedisProcess) -> None:
        scripts = redis.Redis(port=flushed.port)
        scripts.script_flush()
        scripts.close()
        opened = client.pipeline

        def first_round(*args: Any, **options: Any) -> Any:
            self.monkeypatch.setattr(client, "pipeline", second_round)
            return opened(*args, **options)

        def second_round(*args: Any, **options: Any) -> Any:
            self.monkeypatch.setattr(client, "pipeline", opened)
            self._cut_off(flushed)
            return opened(*args, **options)

        self.monkeypatch.setattr(client, "pipeline", first_round)

    def _cut_off(self, primary: RedisProcess) -> None:
        replica_port = int(info(primary, "replication")["slave0"]["port"])  # type: ignore[index]
        replica = next(node for node in self.cluster.nodes if node.port == replica_port)
        for node in (replica, primary):
            node.kill()
            self.killed.append(node)

    def restore(self) -> None:
        """Start the primary and its replica again; wait until the cluster is whole."""
        if not self.killed:
            return
        for node in self.killed:
            node.start()
        self.killed.clear()
        self.cluster.wait_until_healthy()


@pytest.fixture
def outage(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outage]:
    made = Outage(cluster, monkeypatch)
    yield made
    made.restore()


def primaries(cluster: LocalCluster, broker: Broker, *parts: str) -> list[RedisProcess]:
    return [cluster.primary_for(broker.queue_keys(part).ready) for part in parts]


@pytest.mark.parametrize("client", ["sync", "asyncio"])
def test_a_batch_across_queues_keeps_the_queue_written_in_the_first_round(
    client: str, cluster: LocalCluster, broker: Broker, outage: Outage
) -> None:
    written, flushed = primaries(cluster, broker, "images", "billing")
    assert written.port != flushed.port
    images, billing = new_task("images"), new_task("billing")
    groups: Mapping[str, Sequence[NewTask]] = {"images": [images], "billing": [billing]}
    warm_up = {"images": [new_task("images")], "billing": [new_task("billing")]}

    async def aenqueue() -> Outcomes:
        await broker.aenqueue_groups(warm_up)  # the loop's client knows the queues and slots
        outage.arm(broker._async_client()[0], flushed)  # no public view of the loop's
        return await broker.aenqueue_groups(groups)

    if client == "sync":
        broker.enqueue_groups(warm_up)
        outage.arm(broker.client, flushed)
        outcomes = broker.enqueue_groups(groups)
    else:
        outcomes = asyncio.run(aenqueue())

    assert outcomes[0] == Enqueued(stored=1, existing={})
    refused = outcomes[1]
    assert isinstance(refused, BrokerUnavailable)  # billing's call alone
    if client == "sync":
        # The sync pool finds the connection dropped before it sends the EVAL; the asyncio
        # one as it sends it, so that the call may have reached Redis (MaybeApplied).
        assert not isinstance(refused, MaybeApplied)
        assert str(refused).endswith("nothing was written.")
    assert broker.record(images.id) is not None  # billing's primary is away: not read


def test_a_sharded_batch_names_the_shards_written_in_the_first_round(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, outage: Outage
) -> None:
    broker = backend.broker
    parts = broker.parts("reports")
    nodes = primaries(cluster, broker, *parts)
    assert len({node.port for node in nodes}) == SHARDS
    flushed = nodes[1]  # the primary of shard 1
    reports = echo.using(queue_name="reports")
    args: list[tuple[list[int], dict[str, Any]]] = [([n], {}) for n in range(60)]
    backend.enqueue_many(reports, args)  # every shard's primary has the script loaded
    outage.arm(broker.client, flushed)

    with pytest.raises(PartlyEnqueued) as raised:
        backend.enqueue_many(reports, args)

    error = raised.value
    ids: dict[int, list[str]] = {shard: [] for shard in range(SHARDS)}
    for task_id in error.written:
        ids[shard_of(task_id, SHARDS)].append(task_id)
    # Shards 0 and 2 were written and confirmed; shard 1's call never ran, its primary gone
    # before the call was sent again.
    assert [bool(ids[shard]) for shard in range(SHARDS)] == [True, False, True]
    assert not error.maybe_written
    assert f"{len(error.written)} of the 60 tasks for sharded queue 'reports' were written" in str(
        error
    )
    assert str(error).endswith(
        "nothing was written. The ids written are in this error's .written; retry only the others."
    )
    assert all(record is not None for record in broker.records(ids[0]))


def test_an_acquire_across_queues_hands_over_the_tasks_reserved_in_the_first_round(
    cluster: LocalCluster, broker: Broker, outage: Outage
) -> None:
    [flushed] = primaries(cluster, broker, "billing")
    tasks = {queue: new_task(queue) for queue in ("images", "billing")}
    broker.acquire_from({"images": 1, "billing": 1})  # its script loaded: nothing to reserve
    for queue, task in tasks.items():
        broker.enqueue(queue, [task])
    outage.arm(broker.client, flushed)

    images, billing = broker.acquire_from({"images": 1, "billing": 1})

    # Raised, it left the images task reserved by nobody until its reservation lapsed.
    assert [r.lease.task_id for r in images.reservations] == [tasks["images"].id]
    assert (billing.reservations, type(billing.failed)) == ([], BrokerUnavailable)
    assert str(billing.failed).endswith("nothing was written.")
