"""A real 6-node Redis Cluster per module, and a backend on it with queues on three primaries.

The queue names are chosen by hash slot: with ``redis-cli --cluster create`` on 3 primaries,
"images" (slot 4887), "billing" (7094) and "default" (15466) land on three different nodes;
"emails" and "reports" are there because the example tasks name them.
"""

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from django.test import override_settings

from tests.conftest import tasks_setting
from tests.servers.redis_cluster import LocalCluster, local_cluster
from tests.servers.redis_server import server_version

QUEUES = ("images", "billing", "default", "emails", "reports")
MIN_CLUSTER_VERSION = (7, 0)  # cluster-port (free bus ports) and ADDSLOTSRANGE


def skip_without_cluster_support() -> None:
    engine, version = server_version()
    if version < MIN_CLUSTER_VERSION:
        pytest.skip(f"needs redis-server 7.0+ for a local cluster; found {engine} {version}")
    if shutil.which("redis-cli") is None:
        pytest.skip("needs redis-cli on PATH to create the cluster (redis-cli --cluster create)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    skip_without_cluster_support()
    with local_cluster() as created:
        yield created


@contextmanager
def cluster_serving_with_a_primary_down() -> Iterator[LocalCluster]:
    """A cluster of a module's own, whose primaries go on serving their slots while another
    is down (``cluster-require-full-coverage no``): for tests that take a primary away."""
    skip_without_cluster_support()
    with local_cluster() as created:
        for node in created.nodes:
            client = redis.Redis(port=node.port)
            client.config_set("cluster-require-full-coverage", "no")
            client.close()
        yield created


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    return cluster.url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "durability": "replicated"}


@pytest.fixture(autouse=True)
def threadmill_settings(
    redis_url: str, key_prefix: str, tasks_options: dict[str, object]
) -> Iterator[None]:
    setting = tasks_setting(redis_url, key_prefix, **tasks_options)
    setting["default"]["QUEUES"] = list(QUEUES)  # type: ignore[index]
    with override_settings(TASKS=setting):
        yield


def command_env(tasks_options: dict[str, object]) -> dict[str, str]:
    """Environment that gives a worker or reaper subprocess the same backend settings."""
    return {
        "THREADMILL_QUEUES": ",".join(QUEUES),
        "THREADMILL_OPTIONS": json.dumps(tasks_options),
    }


@pytest.fixture
def redis_client(cluster: LocalCluster, key_prefix: str) -> Iterator[redis.RedisCluster]:
    """A cluster client; afterwards it deletes the test's keys, one slot at a time."""
    client = redis.RedisCluster.from_url(cluster.url, decode_responses=True)
    yield client
    for key in client.scan_iter(f"{key_prefix}:*", count=1000):
        client.delete(key)
    client.close()
