"""A worker beside a Redis Cluster primary down with no replica to take over.

Its prefetcher logged a WARNING at every recheck of the down node's queue ("Fetch from a queue
failed", every 5 s) and another whenever the idle waiter of that node's slot failed to connect
("Fetch failed, retrying in 0.1s", about as often): 34 lines in 90 s, for as long as the node
was away. Each said "Start Redis or fix TASKS LOCATION", though LOCATION was right and only one
node was down. Now the queue's first failure is one WARNING naming the node and what to do, its
retries are DEBUG lines, the waiter leaves a node away to the refills, and the queue's first
answer after it is one INFO (worker/failing_calls.py, broker/wake.py).
"""

import re
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

pytestmark = pytest.mark.slow

RECHECKS = 2  # tries of the down queue seen before the lines are counted: a retry at least
# A line of the down queue's fetch failing, with its level.
QUEUE_FAILED = re.compile(
    rf"^\S+ \S+ (\w+) .*Fetch from a queue failed, the others go on queue={DOWN} .*$", re.M
)
BACK = rf"Fetch from a queue works again queue={DOWN} failed_for_s=[\d.]+"


def queue_failed(log: str) -> list[tuple[str, str]]:
    """Return the down queue's fetch failures logged: each line's level, and the line."""
    return [(found[1], found[0]) for found in QUEUE_FAILED.finditer(log)]


def said_while_down(log: str, refused: BrokerUnavailable, port: int) -> None:
    """Check what the enqueue to the down queue raised, and what the worker logged meanwhile:
    one WARNING naming the node, its retries at DEBUG, no round failing whole."""
    node = f"cannot reach its node 127.0.0.1:{port} ("
    assert node in str(refused)
    assert "Start that node, or wait for a replica to take over its hash slots" in str(refused)
    (first, warning), *retries = queue_failed(log)
    assert {level for level, _ in retries} == {"DEBUG"}, log
    assert first == "WARNING", log
    assert node in warning
    assert "fix TASKS LOCATION" not in log
    assert "Fetch failed, retrying" not in log, log


@pytest.mark.timeout(240)
def test_the_down_node_is_named_in_one_warning_and_its_queue_s_return_in_one_info(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    victim = cluster.primary_for(backend.broker.queue_keys(DOWN).ready)
    its_replica = replica_of(cluster, victim)
    runs = str(tmp_path / "runs.log")
    command = worker(redis_url, key_prefix, "-v", "2", extra_env=command_env(tasks_options))
    with running(command):
        before = count_run.using(queue_name=UP[0]).enqueue(runs)
        wait_until(lambda: status(before) == TaskResultStatus.SUCCESSFUL, "a task before")
        its_replica.kill()  # first: no failover can serve the slot
        victim.kill()
        try:
            with pytest.raises(BrokerUnavailable) as refused:
                count_run.using(queue_name=DOWN).enqueue(runs)
            during = [count_run.using(queue_name=queue).enqueue(runs) for queue in UP]
            wait_until(
                lambda: all(status(result) == TaskResultStatus.SUCCESSFUL for result in during),
                "the tasks of the queues still served ran",
            )
            wait_until(
                lambda: len(queue_failed(command.log)) >= RECHECKS,
                f"{RECHECKS} tries of the down queue",
            )
            said_while_down(command.log, refused.value, victim.port)
        finally:
            victim.start()
            its_replica.start()
            cluster.wait_until_healthy()
        after = count_run.using(queue_name=DOWN).enqueue(runs)
        wait_until(lambda: status(after) == TaskResultStatus.SUCCESSFUL, "the down queue's task")
        command.wait_for_log(BACK)
        log = command.log

    assert len(re.findall(BACK, log)) == 1
