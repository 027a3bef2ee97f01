"""Workflows whose steps run on the queues still served while a Redis Cluster primary is down
with no replica to take over (``cluster-require-full-coverage no``).

A worker's workflow drainer read the sizes of every outbox of its queues in one pipeline, which
failed whole while one node was away: the entries others left (a process killed after its
finish, a cancel) on the queues still served waited for a reap pass, up to ``lease_ttl`` (60 s
by default; never with ``--reap-interval 0``), where they wait ``POLL_S`` (5 s). Measured: a
chain and a chord whose first steps had ended advanced in none of 100 s with ``--reap-interval
0``, and 55.7 s after their end with the supervisor's reaper. Now the look reads the outboxes
share by share once a node fails, drains those it read, and names the down node's once.
"""

from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.workflows import chain, group, step
from django_threadmill.workflows.result import WorkflowResult
from tests.lifecycle.support import ack, run
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker
from tests.workflows.tasks import collect, number

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of

pytestmark = pytest.mark.slow

LAUNCHES = 20  # tries at a launch whose workflow's hash lands on a node up (2 in 3 do)


def launched(launch: Callable[[], WorkflowResult]) -> WorkflowResult:
    """Launch a workflow, again while its hash's slot is the down node's (nothing is stored)."""
    for _ in range(LAUNCHES):
        try:
            return launch()
        except BrokerUnavailable:
            continue
    raise AssertionError(f"each of {LAUNCHES} launches met the down node")


def succeeded(*flows: WorkflowResult) -> bool:
    for flow in flows:
        flow.refresh()
    return all(flow.status == TaskResultStatus.SUCCESSFUL for flow in flows)


@pytest.mark.timeout(240)
def test_a_chain_and_a_chord_advance_from_entries_a_dead_process_left_by_the_drainer_alone(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    first, then = UP
    victim = cluster.primary_for(backend.broker.queue_keys(DOWN).ready)
    its_replica = replica_of(cluster, victim)
    its_replica.kill()  # first: no failover can serve the slot
    victim.kill()
    try:
        flows = (
            launched(
                lambda: chain(
                    step(number.using(queue_name=first), 1), step(collect.using(queue_name=then))
                ).enqueue()
            ),
            launched(
                lambda: chain(
                    group(
                        step(number.using(queue_name=first), 1),
                        step(number.using(queue_name=first), 2),
                    ),
                    step(collect.using(queue_name=then)),
                ).enqueue()
            ),
        )
        # Their first steps end in a process that dies before it drains: the entries wait in
        # the outbox of a queue still served, noted by no drainer.
        for lease in run(backend.broker, first):
            assert ack(backend.broker, lease)
        drainer_alone = worker(
            redis_url, key_prefix, "--reap-interval", "0", extra_env=command_env(tasks_options)
        )
        with running(drainer_alone):
            wait_until(lambda: succeeded(*flows), "the workflows' ends", timeout_s=60)
            log = drainer_alone.log
    finally:
        victim.start()
        its_replica.start()
        cluster.wait_until_healthy()

    assert (
        f"Workflow outboxes unreadable on a node, the others are drained, looking again later "
        f"unread={DOWN} error=The Redis Cluster at {redis_url} cannot reach its node "
        f"127.0.0.1:{victim.port} ("
    ) in log
    callback = flows[1].results[-1]
    assert callback is not None
    assert callback.return_value == [None, None]  # the members' values the dead process recorded
