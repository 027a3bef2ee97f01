"""Workers beside a Redis Cluster primary down with no replica to take over.

A worker that held no lease in the down node's queue logged "Lease renewal failed held=0 error=not
renewed in queue images, renewed in the others" at WARNING at every retry of its heartbeat there
(13 to 14 lines in 90 s, about 550 an hour), and its workflow drainer "Workflow outboxes
unreadable, looking again later" at WARNING at every look (9 to 10 in 90 s), for as long as the
node was away. Now each is one WARNING as it begins to fail, naming the node (the look, the
down node's outboxes: it reads the others), DEBUG lines after (``-v 2``) and one INFO once it
works again (worker/failing_calls.py). A process that holds a lease in that queue still warns at
every failed renewal: unrenewed for lease_ttl, its task would be handed to another worker while
it runs here.
"""

import re
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.faults.tasks import wait_for_file
from tests.servers.redis_cluster import LocalCluster
from tests.support import running, wait_until, worker

from ..conftest import command_env
from .conftest import DOWN, replica_of, status

pytestmark = pytest.mark.slow

RETRIES = 1  # failures seen after the first, before the lines are counted
# A line of a renewal failing in the down queue: its level, its leases held there (unrenewed=,
# absent before the fix), and the line.
RENEWAL_FAILED = re.compile(
    r"^\S+ \S+ (\w+) .*Lease renewal failed held=\d+ (?:unrenewed=(\d+) )?"
    rf"error=not renewed in queue {DOWN}, .*$",
    re.M,
)
OUTBOXES_UNREADABLE = re.compile(
    r"^\S+ \S+ (\w+) .*Workflow outboxes unreadable on a node, the others are drained, looking "
    rf"again later unread={DOWN} .*$",
    re.M,
)
RENEWED = rf"Lease renewal works again queue={DOWN} failed_for_s=[\d.]+"
READABLE = rf"Workflow outboxes readable again read={DOWN} failed_for_s=[\d.]+"


def renewals_failed(log: str) -> list[tuple[str, str, str]]:
    """Return the down queue's renewal failures logged: level, leases unrenewed, line."""
    return [(found[1], found[2] or "", found[0]) for found in RENEWAL_FAILED.finditer(log)]


def looks_failed(log: str) -> list[tuple[str, str]]:
    """Return the failed looks at every outbox logged: each line's level, and the line."""
    return [(found[1], found[0]) for found in OUTBOXES_UNREADABLE.finditer(log)]


def said_once(lines: list[tuple[str, str]], node: str, log: str) -> None:
    """Check that ``lines`` are one WARNING naming ``node``, then DEBUG lines only."""
    (first, warning), *retries = lines
    assert len(retries) >= RETRIES, log
    assert {level for level, _ in retries} == {"DEBUG"}, log
    assert first == "WARNING", log
    assert node in warning, warning


def said_while_down(idle_log: str, holder_log: str, node: str) -> None:
    """Check what the workers logged while the node was down: the idle one, one WARNING for
    its renewals there and one for its looks at the outboxes, DEBUG lines after; the one that
    holds a lease there, a WARNING at every renewal."""
    renewals = renewals_failed(idle_log)
    said_once([(level, line) for level, _, line in renewals], node, idle_log)
    assert {unrenewed for _, unrenewed, _ in renewals} == {"0"}, idle_log
    said_once(looks_failed(idle_log), node, idle_log)
    assert {level for level, _, _ in renewals_failed(holder_log)} == {"WARNING"}, holder_log
    assert {unrenewed for _, unrenewed, _ in renewals_failed(holder_log)} == {"1"}, holder_log


@pytest.mark.timeout(240)
def test_failures_without_a_lease_at_stake_are_said_once_and_with_one_at_every_renewal(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
) -> None:
    victim = cluster.primary_for(backend.broker.queue_keys(DOWN).ready)
    its_replica = replica_of(cluster, victim)
    node = f"cannot reach its node 127.0.0.1:{victim.port} ("
    gate = tmp_path / "gate"
    env = command_env(tasks_options)
    holder = worker(redis_url, key_prefix, "-v", "2", extra_env=env)
    with running(holder):
        held = wait_for_file.using(queue_name=DOWN).enqueue(str(gate))
        wait_until(lambda: status(held) == TaskResultStatus.RUNNING, "the held task's start")
        idle = worker(redis_url, key_prefix, "-v", "2", extra_env=env)  # started once it runs
        with running(idle):
            its_replica.kill()  # first: no failover can serve the slot
            victim.kill()
            try:
                wait_until(
                    lambda: (
                        len(renewals_failed(idle.log)) > RETRIES
                        and len(looks_failed(idle.log)) > RETRIES
                        and len(renewals_failed(holder.log)) > RETRIES
                    ),
                    f"{RETRIES} retries of the renewals and of the look at the outboxes",
                )
                said_while_down(idle.log, holder.log, node)
            finally:
                victim.start()
                its_replica.start()
                cluster.wait_until_healthy()
            idle.wait_for_log(RENEWED)
            idle.wait_for_log(READABLE)
            holder.wait_for_log(RENEWED)
            back_log = idle.log
        # The node came back empty (the local cluster keeps no data): the held task's record
        # went with it, so its end is not waited for; the gate lets the holder stop at once.
        gate.write_text("go")

    assert len(re.findall(RENEWED, back_log)) == 1
    assert len(re.findall(READABLE, back_log)) == 1
