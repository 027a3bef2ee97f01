"""A Redis Cluster primary down with no replica to take over, under
``cluster-require-full-coverage no``, and the reapers beside it.

Every reap pass read the server first, INFO from every primary: the down one failed it, so each
pass failed at its start ("Reap pass failed, retrying next interval") and no queue was reaped.
A worker killed meanwhile kept its task on a queue still served leased, RUNNING, until the node
came back. Now the pass leaves the down primary out of the server, skips its queues in one line
naming them and reaps the others; the node's return changes the server, so its queues' leases
wait a hold for their workers' renewals (docs/lifecycle.md, After an outage or a stall).
"""

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reap_hold import ReapHold
from django_threadmill.worker.reap_report import ReapReport
from tests.faults.tasks import wait_for_file
from tests.lifecycle.support import run
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command, HandClock, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, UP, replica_of, status

LEASE_TTL_S = 3.0  # the killed worker's lease lapses this long after its last renewal
NEW_SERVER = "a new Redis server (restarted or failed over), first seen 0."  # a hold's reason


@contextmanager
def primary_down(cluster: LocalCluster, backend: ThreadmillTaskBackend) -> Iterator[int]:
    """Take away the primary of the queue DOWN and its replica (first: no failover can serve
    its slots) for the block; yield the primary's port. Both are started again after it."""
    victim = cluster.primary_for(backend.broker.queue_keys(DOWN).ready)
    its_replica = replica_of(cluster, victim)
    its_replica.kill()
    victim.kill()
    try:
        yield victim.port
    finally:
        victim.start()
        its_replica.start()
        cluster.wait_until_healthy()


def lease_lapsed(backend: ThreadmillTaskBackend, task_id: str, redis_url: str) -> bool:
    """Tell whether ``task_id``'s lease deadline is past by the Redis clock at LOCATION."""
    deadline_ms = backend.broker.client.zscore(backend.broker.queue_keys(UP[0]).leases, task_id)
    assert deadline_ms is not None, "the killed worker's task lost its lease"
    with redis.Redis.from_url(redis_url) as client:
        seconds, micros = client.time()
    return seconds * 1000 + micros / 1000 > float(deadline_ms)


@pytest.mark.timeout(180)
def test_a_killed_worker_s_task_on_a_queue_still_served_is_reaped(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    env = command_env(tasks_options)
    only_up = ("--queue", UP[0], "--reap-interval", "0")  # only the reaper settles its task
    dying = worker(redis_url, key_prefix, *only_up, lease_ttl_s=LEASE_TTL_S, extra_env=env)
    with primary_down(cluster, backend) as port:
        try:
            dying.wait_for_log(r"Worker process started")
            held = wait_for_file.using(queue_name=UP[0]).enqueue(str(tmp_path / "never"))
            wait_until(lambda: status(held) == TaskResultStatus.RUNNING, "the held task's start")
            for pid in dying.child_pids():  # first: one whose supervisor died stops gracefully
                os.kill(pid, signal.SIGKILL)
        finally:
            dying.close()  # SIGKILLs the supervisor
        wait_until(lambda: lease_lapsed(backend, held.id, redis_url), "the lease's lapse")
        reap = Command(redis_url, key_prefix, "threadmill_reap", "--once", extra_env=env)
        try:
            code, log = reap.wait(), reap.log
        finally:
            reap.close()
        reaped_as = status(held)

    assert reaped_as == TaskResultStatus.READY, log  # settled: to run again, as its policy says
    assert code == 1, log
    assert (
        f"Reap skipped the queues of a node that did not answer, the others go on queues={DOWN} "
        f"error=The Redis Cluster at {redis_url} cannot reach its node 127.0.0.1:{port} ("
    ) in log
    assert f"Reap of queue {DOWN} failed, the other queues were reaped" in log


def pass_after(
    hold: ReapHold, clock: HandClock[float], seconds: float, backend: ThreadmillTaskBackend
) -> ReapReport:
    """Run a reaping loop's pass ``seconds`` after its last on ``clock``, the loop seen
    running meanwhile (no stall)."""
    end = clock.now + seconds
    while clock.now < end:
        clock.now = min(end, clock.now + hold.tick_s)
        hold.tick()
    return hold.run(backend)


def lapsed_lease_on(backend: ThreadmillTaskBackend, queue: str) -> str:
    """Start a task of ``queue`` as a worker would, and put its lease deadline a second in the
    past by the Redis clock, as if its worker had not renewed; return its id."""
    task_id = wait_for_file.using(queue_name=queue).enqueue("never").id
    run(backend.broker, queue)
    lapsed_ms = backend.broker.server_time_ms() - 1000
    backend.broker.client.zadd(backend.broker.queue_keys(queue).leases, {task_id: lapsed_ms})
    return task_id


def server_noted(backend: ThreadmillTaskBackend, ms_ago: int) -> None:
    """Say the reapers first saw the server they noted this long ago."""
    client, key = backend.broker.client, backend.broker.keyspace.server
    identity, _ = client.get(key).split(" ")
    client.set(key, f"{identity} {backend.broker.server_time_ms() - ms_ago}")


@pytest.mark.timeout(180)
def test_the_queues_of_a_primary_back_wait_a_hold_before_their_leases_are_settled(
    cluster: LocalCluster, backend: ThreadmillTaskBackend
) -> None:
    clock = HandClock(1000.0)
    hold = ReapHold(backend.settings.renewal_s, clock=clock)
    hold.run(backend)  # every primary up: noted as the reapers' server
    with primary_down(cluster, backend):
        report = pass_after(hold, clock, hold.tick_s, backend)
        assert list(report.failures) == [DOWN]
        assert hold.held.startswith(NEW_SERVER)  # the server changed: its primary left

    task_id = lapsed_lease_on(backend, DOWN)
    pass_after(hold, clock, hold.tick_s, backend)
    assert hold.held.startswith(NEW_SERVER)  # the primary is back: so is a hold
    assert wait_for_file.get_result(task_id).status == TaskResultStatus.RUNNING

    server_noted(backend, ms_ago=int(hold.hold_s * 1000) + 1)
    report = pass_after(hold, clock, hold.hold_s, backend)
    assert hold.held == ""
    assert report.queues[DOWN].retried == 1
