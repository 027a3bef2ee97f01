"""The primary of the alias-wide keys (``{alias}``: the queue set, the layouts, the reapers'
server note) down with no replica to take over, under ``cluster-require-full-coverage no``,
and the reapers beside it.

Every reap pass read the queue set first: it failed at its start ("Reap pass failed, retrying
next interval"), each ``threadmill_reap --once`` exited 1 after about 12 s, and a worker killed
meanwhile kept its task on a queue of a primary still up RUNNING until the node came back. Now
a pass goes through the queues in QUEUES, saying those registered only in Redis are unknown;
as the note that dates the server is unread, a loop goes by its own sight of the primaries
(its first pass holds, a ``--once`` settles nothing), and the node's return holds the leases
of its queues for their workers' renewals (docs/lifecycle.md, After an outage or a stall).
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.server_identity import ServerSeen
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reap_hold import ReapHold
from tests.faults.tasks import wait_for_file
from tests.lifecycle.support import run
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command, HandClock, wait_until

from ..conftest import command_env
from .test_enqueues_and_a_worker_started_go_on_while_the_primary_of_the_alias_wide_keys_is_down import (  # noqa: E501
    alias_primary_down,
)

pytestmark = pytest.mark.slow

STILL_SERVED = "default"  # slot 15466: on a primary that stays up
LEASE_TTL_S = 3.0  # the reapers' hold: a renewal interval (1 s) and 2 s
UNKNOWN = "Reap goes through the queues in QUEUES alone, those registered only in Redis unknown"
UNNOTED = "the reapers' server note unread (its Redis Cluster node did not answer)"


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names a primary that stays up: the one of "images"."""
    return cluster.primary_for("{default:images}").url


def lapsed_lease_on(backend: ThreadmillTaskBackend, queue: str) -> str:
    """Start a task of ``queue`` as a worker that then died would have, and put its lease
    deadline a second in the past by the Redis clock; return its id."""
    task_id = wait_for_file.using(queue_name=queue).enqueue("never").id
    run(backend.broker, queue)
    lapsed_ms = backend.broker.server_time_ms() - 1000
    backend.broker.client.zadd(backend.broker.queue_keys(queue).leases, {task_id: lapsed_ms})
    return task_id


def status_of(task_id: str) -> TaskResultStatus:
    return wait_for_file.get_result(task_id).status


def reaper(redis_url: str, key_prefix: str, env: dict[str, str], *args: str) -> Command:
    return Command(
        redis_url, key_prefix, "threadmill_reap", *args, lease_ttl_s=LEASE_TTL_S, extra_env=env
    )


def held_since_the_last(log: str, line: str) -> bool:
    """Tell whether a hold was logged after the last ``line`` of ``log``."""
    return line in log and "Expired leases held" in log[log.rindex(line) :]


@pytest.mark.timeout(240)
def test_a_loop_reaps_the_queues_still_served_and_holds_again_when_the_node_is_back(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    env = command_env(tasks_options)
    with alias_primary_down(cluster, backend) as down:
        still_served = lapsed_lease_on(backend, STILL_SERVED)
        loop = reaper(redis_url, key_prefix, env, "--interval", "1")
        try:
            wait_until(
                lambda: status_of(still_served) == TaskResultStatus.READY,
                "the dead worker's task on a queue still served settled",
            )
        except AssertionError:
            loop.close()
            raise
    try:
        # The first pass that reads the note again holds every lease: the workers of the
        # node's queues, cut off from it too, renew first.
        wait_until(lambda: held_since_the_last(loop.log, UNKNOWN), "a hold after the return")
        log = loop.log
    finally:
        loop.close()

    assert f"{UNKNOWN} queues=billing,default,emails,images,reports error=" in log
    assert f"cannot reach its node {down} (" in log
    assert f"reason={UNNOTED}, the primaries that answer first seen by this reaper 0." in log
    assert f"Lease expired, retrying task_id={still_served}" in log


@pytest.mark.timeout(180)
def test_a_once_pass_settles_nothing_and_says_a_loop_will(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    env = command_env(tasks_options)
    with alias_primary_down(cluster, backend):
        still_served = lapsed_lease_on(backend, STILL_SERVED)
        once = reaper(redis_url, key_prefix, env, "--once")
        try:
            code, log = once.wait(), once.log
        finally:
            once.close()
        left = status_of(still_served)

    assert left == TaskResultStatus.RUNNING  # no pass can tell a restart before it
    assert code == 1, log
    assert (
        f"Expired leases held: {UNNOTED}, the primaries that answer first seen by this reaper "
        "0.0s ago. A --once pass settles none while that node is down: a reaping loop "
        "(threadmill_reap without --once, or a worker's supervisor) settles those still "
        "expired once it has seen the same primaries for 3s"
    ) in log


def seen(identity: str, now_ms: int, *, noted: bool) -> ServerSeen:
    """What a pass reads of the server: with the note (first seen long ago), or without."""
    if noted:
        return ServerSeen(ms_ago=10**9, unreached={}, identity=identity, now_ms=now_ms)
    unnoted = BrokerUnavailable("cannot reach its node 127.0.0.1:7001")
    return ServerSeen(ms_ago=None, unreached={}, identity=identity, now_ms=now_ms, unnoted=unnoted)


def test_a_node_of_the_note_back_with_the_same_server_still_holds(
    backend: ThreadmillTaskBackend,
) -> None:
    """A partition ends with the node's run_id unchanged: the note names the server as it was
    before, first seen long ago, yet the node's queues' workers could not renew meanwhile."""
    clock = HandClock(1000.0)
    hold = ReapHold(renewal_s=1.0, clock=clock)

    def pass_at(seconds: float, server: ServerSeen) -> bool:
        """Run a pass's decision ``seconds`` after the first, the loop seen running between."""
        while clock.now < 1000.0 + seconds:
            clock.now = min(1000.0 + seconds, clock.now + hold.tick_s)
            hold.tick()
        return hold._settles(server)

    settled = [
        pass_at(0.0, seen("a,b", 5_000, noted=False)),  # first seen now: held
        pass_at(0.5, seen("a,b", 5_500, noted=False)),
        pass_at(3.5, seen("a,b", 8_500, noted=False)),  # seen for a hold's length: settled
        pass_at(4.0, seen("a,b,c", 9_000, noted=True)),  # the note's node back
        pass_at(4.5, seen("a,b,c", 9_500, noted=True)),
        pass_at(7.5, seen("a,b,c", 12_500, noted=True)),
    ]

    assert settled == [False, False, True, False, False, True]
