"""SIGKILL of a primary mid-run on a Redis Cluster, durability="replicated": 0 tasks lost.

The killed node's replica takes over its slots; the node is started again and rejoins as a
replica, so WAIT finds a replica again. THREADMILL_SLOW=1 runs 3000 tasks instead of 150.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from tests.servers.failover import SLOW, assert_failover_loses_nothing
from tests.servers.redis_cluster import LocalCluster, local_cluster

from .conftest import QUEUES, command_env, skip_without_cluster_support


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A cluster of this module's own: the test kills one of its primaries."""
    skip_without_cluster_support()
    with local_cluster() as created:
        yield created


@pytest.mark.timeout(600 if SLOW else 180)
def test_primary_killed_mid_run_loses_no_acknowledged_task(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    tasks_options: dict[str, object],
    key_prefix: str,
    tmp_path: Path,
) -> None:
    def fail_over() -> None:
        cluster.restart(cluster.kill_primary_of(backend.broker.queue_keys("images").ready))

    env = command_env(tasks_options)
    assert_failover_loses_nothing(
        cluster.url, key_prefix, env, QUEUES, fail_over, tmp_path / "runs.log"
    )
