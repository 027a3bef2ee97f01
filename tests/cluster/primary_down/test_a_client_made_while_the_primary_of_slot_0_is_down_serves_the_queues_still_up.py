"""A client made while the primary of slot 0 is down, with no replica to take over.

redis-py's asyncio cluster client reads the command table (COMMAND) as it first connects, from
its default node: the primary of slot 0. That primary down, every new asyncio client failed to
start, so each ``aenqueue`` on a new event loop (a sync view's ``async_to_sync``, a new ASGI
worker, an async task on a worker's event loop) was refused with "Connect call failed" though
its queue's own primary served it. The table is now read from the next node that answers
(broker/cluster_commands.py). Then its first EVALSHA went to a random primary, not its key's
(redis-py 8 routes a script call by its keys only once connected): a third of the time the one
down. It connects first now (broker/core.py). The sync client's COMMAND goes through redis-py's
retries, which pick another default node: checked too, here and in a worker started while the
node is down.
"""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.servers.redis_server import RedisProcess
from tests.support import running, wait_until, worker
from tests.worker.async_tasks import enqueue_square
from tests.worker.tasks import square

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

pytestmark = pytest.mark.slow

IN_SLOT_0 = "3560"  # a key whose hash slot is 0
# Enqueues, each asyncio one on a new event loop and so a new client: enough that a first call
# sent to a random primary meets the down one (1 in 3, 1 in 9 once retried) all but surely.
ENQUEUES = 30


@pytest.fixture
def first_primary_down(cluster: LocalCluster) -> Iterator[RedisProcess]:
    """Take the primary of slot 0 (and of the down queue) away with its replica, so that no
    failover follows; afterwards start both again."""
    victim = cluster.primary_for(IN_SLOT_0)
    assert victim is cluster.primary_for(f"{{default:{DOWN}}}")
    its_replica = replica_of(cluster, victim)
    its_replica.kill()
    victim.kill()
    yield victim
    victim.start()
    its_replica.start()
    cluster.wait_until_healthy()


def succeeded(result: TaskResult) -> bool:
    return status(result) == TaskResultStatus.SUCCESSFUL


@pytest.mark.usefixtures("first_primary_down")
@pytest.mark.parametrize("client", ["sync", "asyncio"])
def test_new_clients_enqueue_to_the_queues_still_served(client: str, tmp_path: Path) -> None:
    log = str(tmp_path / "runs.log")
    tasks = [count_run.using(queue_name=UP[number % len(UP)]) for number in range(ENQUEUES)]
    if client == "asyncio":
        results = [asyncio.run(task.aenqueue(log)) for task in tasks]
    else:  # this test's backend: a new sync client, made by the first enqueue
        results = [task.enqueue(log) for task in tasks]

    assert [status(result) for result in results] == [TaskResultStatus.READY] * ENQUEUES


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("first_primary_down")
def test_a_worker_started_while_it_is_down_runs_the_queues_still_served(
    redis_url: str, key_prefix: str, tasks_options: dict[str, object], tmp_path: Path
) -> None:
    runs = tmp_path / "runs.log"
    results = [count_run.using(queue_name=queue).enqueue(str(runs)) for queue in UP]
    # An async task that enqueues, on the new worker's event loop: its own asyncio client.
    enqueuer = enqueue_square.using(queue_name=UP[0]).enqueue(7)
    command = worker(redis_url, key_prefix, extra_env=command_env(tasks_options))
    with running(command):
        wait_until(
            lambda: all(map(succeeded, results)) and succeeded(enqueuer),
            "the tasks of the queues still served ran",
        )
        # Its return value, the id of the task it enqueued (typed as the coroutine's).
        enqueued = square.get_result(str(enqueuer.task.get_result(enqueuer.id).return_value))
        wait_until(lambda: succeeded(enqueued), "the task it enqueued ran")

    assert sorted(runs.read_text().split()) == sorted(result.id for result in results)
