"""A primary that lost its Lua scripts (restarted, promoted, SCRIPT FLUSH, a fresh cluster)
while another primary is down with no replica to take over.

A call that meets NOSCRIPT has its script loaded and is sent again. The load went out as a bare
SCRIPT LOAD, which redis-py's cluster client sends to every primary: the down one failed it,
after seconds of redis-py's retries, so an enqueue to a queue whose primary serves was refused
and a worker's fetches, acks and reap passes failed on those queues until the load happened to
reach the live primaries first. On a cluster the call now goes again as EVAL, with its source,
which loads the script on the node that answered NOSCRIPT alone (broker/calls.py, sent_again),
for the sync and the asyncio client.
"""

import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.servers.redis_server import RedisProcess
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

pytestmark = pytest.mark.slow

# What a worker logs when a call to the queues still served failed (the down queue's own
# failures are logged per queue, or say "not renewed in queue images").
FAILED_ON_THE_QUEUES_STILL_SERVED = r"Fetch failed,|Ack batch failed|Metrics not sent"

type TakeDown = Callable[[], None]


@pytest.fixture
def take_primary_down(cluster: LocalCluster) -> Iterator[TakeDown]:
    """Return what takes the down queue's primary away with its replica, so that no failover
    follows; afterwards start both again."""
    killed: list[RedisProcess] = []

    def take_down() -> None:
        victim = cluster.primary_for(f"{{default:{DOWN}}}")
        for node in (replica_of(cluster, victim), victim):
            node.kill()
            killed.append(node)

    yield take_down
    for node in killed:
        node.start()
    if killed:
        cluster.wait_until_healthy()


def flush_scripts(cluster: LocalCluster) -> None:
    """Make every live node forget the scripts, as a restart would."""
    for node in cluster.live():
        client = redis.Redis(port=node.port)
        try:
            client.script_flush()
        finally:
            client.close()


def enqueue_each(cluster: LocalCluster, take_down: TakeDown, log: str) -> list[TaskResult]:
    """Enqueue to the queues still served once before the primary goes down, then twice to
    one of them after, each time on primaries that lost the scripts: the first registers the
    queue in the same pipeline (calls.py), the second is a call of its own (core.py)."""
    count_run.using(queue_name=UP[1]).enqueue(log)
    take_down()
    results = []
    for _ in range(2):
        flush_scripts(cluster)
        results.append(count_run.using(queue_name=UP[0]).enqueue(log))
    return results


async def aenqueue_each(cluster: LocalCluster, take_down: TakeDown, log: str) -> list[TaskResult]:
    """Async twin of ``enqueue_each``. Its first enqueue connects the loop's client while every
    primary is up: a new asyncio client asks the first primary of its slot map for COMMAND."""
    await count_run.using(queue_name=UP[1]).aenqueue(log)
    take_down()
    results = []
    for _ in range(2):
        flush_scripts(cluster)
        results.append(await count_run.using(queue_name=UP[0]).aenqueue(log))
    return results


@pytest.mark.parametrize("client", ["sync", "asyncio"])
def test_enqueues_to_a_queue_still_served_load_the_scripts_on_its_primary(
    client: str, cluster: LocalCluster, take_primary_down: TakeDown, tmp_path: Path
) -> None:
    log = str(tmp_path / "runs.log")
    if client == "asyncio":
        results = asyncio.run(aenqueue_each(cluster, take_primary_down, log))
    else:
        results = enqueue_each(cluster, take_primary_down, log)

    assert [status(result) for result in results] == [TaskResultStatus.READY] * 2


@pytest.mark.timeout(120)
def test_a_worker_runs_the_queues_still_served_on_primaries_that_lost_their_scripts(
    cluster: LocalCluster,
    take_primary_down: TakeDown,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs.log"
    results = [count_run.using(queue_name=queue).enqueue(str(runs)) for queue in UP * 3]
    take_primary_down()
    flush_scripts(cluster)
    command = worker(redis_url, key_prefix, extra_env=command_env(tasks_options))
    with running(command):
        wait_until(
            lambda: all(status(result) == TaskResultStatus.SUCCESSFUL for result in results),
            "the tasks of the queues still served ran",
        )
        log = command.log

    assert not re.search(FAILED_ON_THE_QUEUES_STILL_SERVED, log), log
    assert sorted(runs.read_text().split()) == sorted(result.id for result in results)
