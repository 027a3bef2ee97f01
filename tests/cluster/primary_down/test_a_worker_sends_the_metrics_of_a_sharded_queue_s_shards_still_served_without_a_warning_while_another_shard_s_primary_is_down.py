"""A worker serving a sharded queue (``queue_shards``) with one shard on a Redis Cluster
primary down with no replica to take over (``cluster-require-full-coverage no``).

The ack writer's metrics send marks each task path a shard counts as seen in every shard of its
queue, once an hour: the shard on the down node got a call of its own, which failed, and the
send with it. The worker logged "Metrics not sent, keeping them for the next try" at each new
task path and each hour, for as long as the node was away, though nothing waited to be sent.
Now a send leaves out the parts on a node the client spares (broker/down_nodes.py), as a reap
pass does, and keeps their tallies for when it answers; the shards still served get their
counters and done index at every send.
"""

from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import status
from .test_a_dead_worker_s_task_on_a_queue_still_served_is_reaped_while_another_primary_is_down import (  # noqa: E501
    primary_down,
)

pytestmark = pytest.mark.slow

SPLIT = "default"  # split over one shard per primary: its shard 0 on the primary that goes down
SHARDS = 3
NOT_SENT = "Metrics not sent"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "queue_shards": {SPLIT: SHARDS}}


def on_a_shard_served(runs: str) -> TaskResult:
    """Enqueue a task of SPLIT into a shard still served: an id picked for the down one fails."""
    while True:
        try:
            result = count_run.using(queue_name=SPLIT).enqueue(runs)
        except BrokerUnavailable:
            continue
        if shard_of(result.id, SHARDS) != 0:
            return result


def indexed(backend: ThreadmillTaskBackend, results: list[TaskResult]) -> bool:
    """Tell whether every one of ``results`` ran and is in its shard's done index."""
    broker = backend.broker
    return all(
        status(result) == TaskResultStatus.SUCCESSFUL
        and broker.client.zscore(broker.queue_keys(broker.part_of(result.id) or "").done, result.id)
        is not None
        for result in results
    )


@pytest.mark.timeout(180)
def test_the_shards_still_served_get_their_metrics_and_the_down_one_s_path_mark_says_nothing(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    runs = str(tmp_path / "runs.log")
    command = worker(redis_url, key_prefix, extra_env=command_env(tasks_options))
    with running(command), primary_down(cluster, backend):
        first = [on_a_shard_served(runs) for _ in range(2)]  # a new path: marked in every shard
        wait_until(lambda: indexed(backend, first), "the first tasks in the done index")
        # A later send of the same writer: the first one's lines are logged by then.
        then = [on_a_shard_served(runs) for _ in range(2)]
        wait_until(lambda: indexed(backend, then), "the later tasks in the done index")
        log = command.log

    assert NOT_SENT not in log, log
    assert f"Fetch from a queue failed, the others go on queue={SPLIT} " in log, log
