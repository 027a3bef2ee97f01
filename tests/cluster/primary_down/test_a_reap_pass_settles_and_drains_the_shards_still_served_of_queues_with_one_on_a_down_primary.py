"""A reap pass while a Redis Cluster primary is down with no replica to take over (under
``cluster-require-full-coverage no``), and queues whose shards sit on it and on the others.

A queue split over shards (``queue_shards``) with one on the down primary was skipped whole:
the expired leases of its shards still served stayed RUNNING until the node came back. And a
queue whose earlier shard count has a part there (``{alias}:layouts``) failed its done-index
trim, and the pass's look at the outboxes raised on that part: no workflow advanced from the
outboxes still served. Now the pass leaves out the parts of the down node alone, names them in
one line, and reaps, trims and drains the others (docs/lifecycle.md, After an outage or a
stall); the node's return still holds its leases for their workers' renewals.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.keys import queue_parts, shard_layout, shard_of
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.reap_hold import ReapHold
from django_threadmill.workflows import chain, step
from tests.faults.tasks import wait_for_file
from tests.lifecycle.support import ack, run
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command
from tests.workflows.tasks import add, number

from ..conftest import command_env
from .conftest import DOWN, UP, status
from .test_a_dead_worker_s_task_on_a_queue_still_served_is_reaped_while_another_primary_is_down import (  # noqa: E501
    NEW_SERVER,
    primary_down,
)
from .test_workflows_on_the_queues_still_served_advance_from_the_outboxes_others_left_while_a_primary_is_down import (  # noqa: E501
    launched,
)

pytestmark = pytest.mark.slow

SPLIT = "default"  # split over one shard per primary: its shard 0 on the primary that goes down
SHARDS = 3
EARLIER = UP[0]  # a queue served unsplit, once split over SHARDS: a part of that on the down node
FAILED_QUEUE = "Reap of a queue failed"  # a queue's error of its own, said every pass
SKIPPED = "Reap skipped the queues of a node that did not answer, the others go on queues="


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "queue_shards": {SPLIT: SHARDS}}


def lapsed_in(broker: Broker, shards: set[int]) -> tuple[list[TaskResult], list[TaskResult]]:
    """Enqueue tasks of SPLIT until each of shards holds one, start them as a worker
    would, and put their lease deadlines a second in the past by the Redis clock, as if their
    worker had died; return those of shard 0 (on the primary that goes down), and the others."""
    results: list[TaskResult] = []
    while not shards <= {shard_of(result.id, SHARDS) for result in results}:
        results.append(wait_for_file.using(queue_name=SPLIT).enqueue("never"))
    leases = run(broker, SPLIT)
    assert {lease.task_id for lease in leases} >= {result.id for result in results}
    lapsed_ms = broker.server_time_ms() - 1000
    for lease in leases:
        keys = broker.queue_keys(broker.part_in(SPLIT, lease.task_id))
        broker.client.zadd(keys.leases, {lease.task_id: lapsed_ms}, xx=True)
    on_down = [result for result in results if shard_of(result.id, SHARDS) == 0]
    return on_down, [result for result in results if result not in on_down]


def reaped_once(redis_url: str, key_prefix: str, options: dict[str, object]) -> tuple[int, str]:
    """Run ``threadmill_reap --once``; return its exit code and its output."""
    reap = Command(
        redis_url, key_prefix, "threadmill_reap", "--once", extra_env=command_env(options)
    )
    try:
        return reap.wait(), reap.log
    finally:
        reap.close()


@pytest.mark.timeout(180)
def test_the_shards_still_served_are_reaped_and_the_down_one_s_lease_waits_a_hold_once_back(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    broker = backend.broker
    _, on_up = lapsed_in(broker, set(range(SHARDS)))
    down_part = broker.parts(SPLIT)[0]  # its shard on the primary that goes down
    with primary_down(cluster, backend) as port:
        code, log = reaped_once(redis_url, key_prefix, tasks_options)
        reaped_as = {status(result) for result in on_up}

    assert reaped_as == {TaskResultStatus.READY}, log  # retried, as their policy says
    assert code == 1, log  # expired leases left on the down node: incomplete
    said = (
        f"{SKIPPED}{DOWN},{down_part} error=The Redis Cluster at {redis_url} cannot reach its "
        f"node 127.0.0.1:{port} ("
    )
    assert log.count(SKIPPED) == 1, log
    assert said in log, log
    assert FAILED_QUEUE not in log, log  # no line of its own for the shard left
    back, _ = lapsed_in(broker, {0})  # on the primary back (it kept no data)
    hold = ReapHold(backend.settings.renewal_s)
    hold.run(backend)  # the server changed: its workers renew first
    assert hold.held.startswith(NEW_SERVER)
    assert {status(result) for result in back} == {TaskResultStatus.RUNNING}


@pytest.mark.timeout(180)
def test_the_outboxes_still_served_are_drained_beside_an_earlier_count_s_part_on_the_down_node(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    broker = backend.broker
    broker.client.sadd(broker.keyspace.layouts, shard_layout(EARLIER, SHARDS))  # as it was served
    outbox = broker.queue_keys(EARLIER).outbox
    with primary_down(cluster, backend) as port:
        flow = launched(
            lambda: chain(
                step(number.using(queue_name=EARLIER), 1), step(add.using(queue_name=EARLIER), 2)
            ).enqueue()
        )
        for lease in run(broker, EARLIER):  # its process dies before it drains: the entry waits
            assert ack(broker, lease)
        code, log = reaped_once(redis_url, key_prefix, tasks_options)
        left = broker.client.llen(outbox)
    flow.refresh()
    then = flow.results[-1]

    assert left == 0, log
    assert then is not None, log
    assert then.status == TaskResultStatus.READY, log
    assert "workflow_steps_advanced=1" in log, log
    earlier_part, down_part = (
        queue_parts(broker.settings.alias, q, SHARDS)[0] for q in (EARLIER, SPLIT)
    )
    assert f"{SKIPPED}{DOWN},{earlier_part},{down_part} error=" in log, log
    assert f"cannot reach its node 127.0.0.1:{port} (" in log
    assert FAILED_QUEUE not in log, log  # the earlier count's part there is trimmed no more
    assert code == 1, log
