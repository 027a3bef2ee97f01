"""Edges of a worker on a Redis Cluster: many slots per node, and a result Redis refuses."""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker
from tests.worker.tasks import chars, square

from .conftest import command_env

MIB = 2**20
# 160 shards and the four other queues: about 55 slots on each of 3 primaries, past the default
# max_connections of 50 per node, so that one waiter thread per slot takes every connection.
MANY_SHARDS = {"cluster": True, "queue_shards": {"default": 160}}
# Redis's own proto-max-bulk-len, put back after a test lowered it.
DEFAULT_BULK_LEN = 512 * MIB


def blocked_clients(cluster: LocalCluster) -> int:
    """Return how many clients of the cluster's nodes are blocked in a BLPOP now."""
    total = 0
    for node in cluster.live():
        client = redis.Redis(port=node.port, decode_responses=True)
        try:
            total += sum(entry["cmd"] == "blpop" for entry in client.client_list())
        finally:
            client.close()
    return total


def set_bulk_len(cluster: LocalCluster, limit: int) -> None:
    for node in cluster.live():
        client = redis.Redis(port=node.port)
        try:
            client.config_set("proto-max-bulk-len", str(limit))
        finally:
            client.close()


@pytest.fixture
def small_bulk(cluster: LocalCluster) -> Iterator[None]:
    """Every node takes no argument over 2 MiB, as a managed Redis may be configured."""
    set_bulk_len(cluster, 2 * MIB)
    yield
    set_bulk_len(cluster, DEFAULT_BULK_LEN)


@pytest.mark.parametrize("tasks_options", [MANY_SHARDS])
def test_an_idle_worker_of_more_slots_per_node_than_connections_still_runs_tasks(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    """Its waiter threads, one BLPOP per slot, took every pooled connection of a node: the
    prefetcher and the ack writer waited pool_timeout for one and failed, and no task ran."""
    command = worker(redis_url, key_prefix, "--threads", "2", extra_env=command_env(tasks_options))
    with running(command):
        wait_until(lambda: blocked_clients(cluster) > 0, "the worker's waiters blocked")
        results = backend.enqueue_many(echo, [([n], {}) for n in range(20)])

        def all_ran() -> bool:
            for result in results:
                result.refresh()
            return all(result.status == TaskResultStatus.SUCCESSFUL for result in results)

        wait_until(all_ran, "every task ran", timeout_s=60)


def test_a_result_past_proto_max_bulk_len_fails_its_task_on_a_cluster(
    small_bulk: None, redis_url: str, key_prefix: str, tasks_options: dict[str, object]
) -> None:
    """8 MiB: Redis closes the connection while the client still writes, and redis-py's
    cluster client raises the ConnectionError after its own retries (not a ClusterError)."""
    before = [square.enqueue(n) for n in range(3)]
    refused = chars.enqueue(8 * MIB)
    command = worker(
        redis_url, key_prefix, "--threads", "1", "--burst", extra_env=command_env(tasks_options)
    )
    try:
        assert command.wait(120) == 0, command.log
        log = command.log
    finally:
        command.close()
    refused.refresh()
    assert refused.status == TaskResultStatus.FAILED
    assert "Redis refused to store them as too large" in refused.errors[0].traceback
    assert f"recording the task FAILED task_id={refused.id} chars=8388610" in log
    for n, result in enumerate(before):
        result.refresh()
        assert result.return_value == n * n
