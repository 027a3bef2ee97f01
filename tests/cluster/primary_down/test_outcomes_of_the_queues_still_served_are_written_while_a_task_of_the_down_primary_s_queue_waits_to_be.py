"""A task of a queue whose primary goes down while it runs, with no replica to take over.

Its outcome cannot be written until the node is back. The ack writer sent the failed batch
again whole every few seconds ("Ack batch failed kind=finish ... attempt=N"), and every later
start notice and outcome of the process, on every queue, waited behind it: the tasks of the
queues still served ran and stayed unrecorded for as long as the node was away. Now that
outcome waits for its next try alone, and the others are written meanwhile (worker/unwritten.py).
"""

from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.faults.tasks import count_run, wait_for_file
from tests.servers.redis_cluster import LocalCluster
from tests.servers.redis_server import RedisProcess
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

LEASE_TTL_S = 30.0  # the held task's lease outlives the node's time away: it is never reaped


def saved(node: RedisProcess) -> None:
    """Have ``node`` write its data to disk, which it loads when started again: the cluster's
    nodes keep nothing on disk otherwise."""
    client = redis.Redis(port=node.port)
    try:
        client.save()
    finally:
        client.close()


@pytest.mark.timeout(180)
def test_the_queues_still_served_get_their_outcomes_written_while_one_waits_for_its_node(
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
        held = wait_for_file.using(queue_name=DOWN).enqueue(str(gate))
        wait_until(lambda: status(held) == TaskResultStatus.RUNNING, "the held task's start")
        saved(victim)  # the node comes back with the running task's record and lease
        its_replica.kill()  # first: no failover can serve the slot
        victim.kill()
        gate.write_text("go")  # it ends while its node is down
        command.wait_for_log(r"Ack batch failed kind=finish size=1 ")

        during = [count_run.using(queue_name=queue).enqueue(str(runs)) for queue in UP]
        wait_until(
            lambda: all(status(result) == TaskResultStatus.SUCCESSFUL for result in during),
            "the outcomes of the queues still served, written while the node is down",
        )

        victim.start()
        (victim.directory / "dump.rdb").unlink()  # loaded: the module's later starts begin empty
        its_replica.start()
        cluster.wait_until_healthy()
        wait_until(lambda: status(held) == TaskResultStatus.SUCCESSFUL, "the held task's outcome")

    assert held.task.get_result(held.id).attempts == 1  # never reaped, never run again
    assert sorted(runs.read_text().split()) == sorted(result.id for result in during)
