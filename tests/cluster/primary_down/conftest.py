"""A cluster that serves with one primary down, for the modules here, which take "images"'s
primary away: each module has a cluster of its own."""

from collections.abc import Iterator

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.servers.redis_cluster import LocalCluster, info
from tests.servers.redis_server import RedisProcess

from ..conftest import cluster_serving_with_a_primary_down

DOWN = "images"  # the queue whose primary goes down (slot 4887)
UP = ("billing", "default")  # queues on the two other primaries (slots 7094 and 15466)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A cluster of this module's own, whose live nodes serve their slots while one is down."""
    with cluster_serving_with_a_primary_down() as created:
        yield created


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names a primary that stays up: the one of the queue set and of billing."""
    return cluster.primary_for("{default:billing}").url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True}


def replica_of(cluster: LocalCluster, primary: RedisProcess) -> RedisProcess:
    return next(
        node
        for node in cluster.live()
        if info(node, "replication").get("master_port") == primary.port
    )


def status(result: TaskResult) -> TaskResultStatus:
    return result.task.get_result(result.id).status
