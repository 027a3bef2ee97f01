"""The primary of the alias-wide keys (``{alias}``: the queue set, the layouts, the reapers'
server note) down with no replica to take over, under ``cluster-require-full-coverage no``.

An enqueue to a queue its process had not registered sent the SADD of the queue set in its
round; redis-py routed it, so the node was not remembered (down_nodes.py) and every such enqueue
met redis-py's connection retries twice, about 8 s, for the whole outage, though its task was
stored. A worker started meanwhile never started: its first calls registered its queues there.
Now the SADD goes with its key's node, which is remembered and spared like a call's, and a
worker starts without the registration, which its lease keeper makes once the node answers.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import replica_of, status

SERVED = ("images", "default")  # slots 4887 and 15466: on the two primaries that stay up


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names a primary that stays up: the one of "images"."""
    return cluster.primary_for("{default:images}").url


@contextmanager
def alias_primary_down(cluster: LocalCluster, backend: ThreadmillTaskBackend) -> Iterator[str]:
    """Take away the primary of the queue set and its replica (first: no failover can serve
    its slots) for the block; yield the primary's node name. Both are started again after."""
    victim = cluster.primary_for(backend.broker.keyspace.queues)
    its_replica = replica_of(cluster, victim)
    its_replica.kill()
    victim.kill()
    try:
        yield f"127.0.0.1:{victim.port}"
    finally:
        victim.start()
        its_replica.start()
        cluster.wait_until_healthy()


@pytest.mark.timeout(180)
def test_an_enqueue_stores_its_task_and_spares_the_down_node_of_the_queue_set_afterwards(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    with alias_primary_down(cluster, backend) as down:
        first = count_run.using(queue_name=SERVED[1]).enqueue(str(tmp_path / "runs.log"))
        spared = backend.broker.down_nodes.spares_any([down])
        second = count_run.using(queue_name=SERVED[1]).enqueue(str(tmp_path / "runs.log"))
        statuses = [status(first), status(second)]
    registered = backend.broker.client.sismember(backend.broker.keyspace.queues, SERVED[1])

    assert spared  # the next enqueues fail its SADD at once, not after redis-py's retries
    assert statuses == [TaskResultStatus.READY, TaskResultStatus.READY]
    assert not registered  # written by the next enqueue or the workers' lease keepers


@pytest.mark.timeout(180)
def test_a_worker_started_while_it_is_down_serves_the_queues_of_the_others(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    queues = [argument for queue in SERVED for argument in ("--queue", queue)]
    env, runs = command_env(tasks_options), tmp_path / "runs.log"
    with alias_primary_down(cluster, backend) as down:
        started = worker(redis_url, key_prefix, *queues, extra_env=env)
        with running(started):
            results = [count_run.using(queue_name=q).enqueue(str(runs)) for q in SERVED]
            wait_until(
                lambda: all(status(r) == TaskResultStatus.SUCCESSFUL for r in results),
                "the tasks of the queues served",
            )
            log = started.log

    assert (
        "Queue names not registered, the lease keeper registers them later error=The Redis "
        f"Cluster at {redis_url} cannot reach its node {down} ("
    ) in log
    assert sorted(runs.read_text().split()) == sorted(r.id for r in results)
