"""A primary down with no replica to take over, under ``cluster-require-full-coverage no``.

The other primaries still serve their slots, so the queues there must go on: a worker serving
every queue runs their tasks and renews their leases, and the down node's queue runs again once
the node is back. redis-py's cluster pipeline failed as a whole when it could not connect to
one of its nodes, so every refill, renewal and reap pass spanning the queues failed: no task of
any queue ran, and every lease lapsed (broker/calls.py).
"""

from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.faults.tasks import count_run, wait_for_file
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

LEASE_TTL_S = 15.0  # a renewal meets the down node: redis-py tries it for seconds first


def lease_deadline_ms(backend: ThreadmillTaskBackend, result: TaskResult) -> float:
    """Return the deadline Redis holds for ``result``'s lease."""
    leases = backend.broker.queue_keys(result.task.queue_name).leases
    score = backend.broker.client.zscore(leases, result.id)
    assert score is not None, "the held task lost its lease"
    return float(score)


def redis_ms(url: str) -> float:
    client = redis.Redis.from_url(url)
    try:
        seconds, micros = client.time()
    finally:
        client.close()
    return seconds * 1000 + micros / 1000


@pytest.mark.timeout(180)
def test_queues_still_served_run_and_keep_their_leases_while_a_primary_is_down(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    victim = cluster.primary_for(backend.broker.queue_keys(DOWN).ready)
    its_replica = replica_of(cluster, victim)
    runs, gate = tmp_path / "runs.log", tmp_path / "gate"
    env = command_env(tasks_options)
    command = worker(
        redis_url, key_prefix, "--threads", "3", lease_ttl_s=LEASE_TTL_S, extra_env=env
    )
    with running(command):
        held = wait_for_file.using(queue_name=UP[0]).enqueue(str(gate))
        wait_until(lambda: status(held) == TaskResultStatus.RUNNING, "the held task's start")
        its_replica.kill()  # first: no failover can serve the slot
        victim.kill()
        down_since_ms = redis_ms(redis_url)
        command.wait_for_log(r"Lease renewal failed")  # the worker met the down primary

        during = [count_run.using(queue_name=queue).enqueue(str(runs)) for queue in UP]
        wait_until(
            lambda: all(status(result) == TaskResultStatus.SUCCESSFUL for result in during),
            "the tasks of the queues still served ran",
        )
        wait_until(
            lambda: lease_deadline_ms(backend, held) > down_since_ms + LEASE_TTL_S * 1000,
            "a renewal of the held task's lease after the primary went down",
        )

        victim.start()
        its_replica.start()
        cluster.wait_until_healthy()
        after = count_run.using(queue_name=DOWN).enqueue(str(runs))
        wait_until(lambda: status(after) == TaskResultStatus.SUCCESSFUL, "the down queue's task")
        gate.write_text("go")
        wait_until(lambda: status(held) == TaskResultStatus.SUCCESSFUL, "the held task's end")

    assert held.task.get_result(held.id).attempts == 1  # never reaped, never run again
    assert sorted(runs.read_text().split()) == sorted(result.id for result in [*during, after])
