"""A queue's hash slot moved to another node while a task runs: the reaper does not reap it.

An operator moves slots while workers run (``redis-cli --cluster reshard``, or by hand: CLUSTER
SETSLOT IMPORTING/MIGRATING, MIGRATE the keys, SETSLOT NODE). While the slot is in migration no
script of the queue runs (docs/scaling.md, Limits): a worker's lease renewals fail, as the
reaper's calls do, and a move that outlasts two thirds of ``lease_ttl`` lapses the leases of
tasks still running. The reaper must then hold off as after an outage (docs/lifecycle.md, After
an outage or a stall), giving the live worker a renewal interval to renew once the slot has
moved. Before, a failed pass counted as an outage only when Redis refused writes, so the first
pass after the move settled the lapsed leases: the running tasks were retried and run twice,
and their workers' results refused.

The lease is held by the test, as a worker holds it, so that it renews after the reaper's first
pass past the move: a real worker's renewal retry lands there or later, whenever the pass comes
first. The reaper is the real ``threadmill_reap`` loop.
"""

import re
import signal
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.crc import key_slot

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.backend_support import WORKER, finish, start
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command, wait_until

from .conftest import command_env
from .test_ask_confirmation import primary_ids

QUEUE = "images"
LEASE_TTL_S = 9.0  # renewals every 3 s; a reaper holds for 5 s, several passes at --interval 1
FAILED_PASS = r"Reap of a queue failed, the others go on queue=images"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "durability": "replicated", "lease_ttl": LEASE_TTL_S}


@pytest.fixture
def reaper(
    cluster: LocalCluster, key_prefix: str, tasks_options: dict[str, object]
) -> Iterator[Command]:
    command = Command(
        cluster.url, key_prefix, "threadmill_reap", "--interval", "1",
        lease_ttl_s=LEASE_TTL_S, extra_env=command_env(tasks_options),
    )  # fmt: skip
    try:
        command.wait_for_log(r"Reaper started")
        yield command
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def ms(node: redis.Redis) -> int:
    seconds, micros = node.time()
    return seconds * 1000 + micros // 1000


def migrate(source: redis.Redis, target: redis.Redis, slot: int, most: int) -> None:
    """MIGRATE up to ``most`` keys of ``slot`` from ``source`` to ``target``, as reshard does."""
    keys = source.execute_command("CLUSTER GETKEYSINSLOT", slot, most)
    if keys:
        port = target.connection_pool.connection_kwargs["port"]
        source.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *keys)


def info_calls_by_others(node: redis.Redis) -> Callable[[], int]:
    """Return a counter of the INFO calls ``node`` served since now, this counter's own left
    out: every reap pass opens with an INFO to each primary (the server's identity)."""

    def calls() -> int:
        return int(node.info("commandstats").get("cmdstat_info", {}).get("calls", 0))

    first, reads = calls(), 1

    def others() -> int:
        nonlocal reads
        seen = calls()
        reads += 1
        return seen - first - (reads - 1)  # each read counts in the next one

    return others


def test_a_task_running_while_its_slot_moves_is_not_reaped_once_it_has_moved(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, reaper: Command
) -> None:
    broker = backend.broker
    result = echo.using(queue_name=QUEUE).enqueue("moved")
    lease = start(backend, result.id)  # RUNNING, held as a live worker holds it
    keys = broker.queue_keys(QUEUE)
    slot = key_slot(keys.ready.encode())
    owner, target = primary_ids(cluster, keys.ready)
    deadline_ms = int(owner.zscore(keys.leases, result.id))  # type: ignore[arg-type]
    owner_id, target_id = (node.execute_command("CLUSTER MYID") for node in (owner, target))

    # The move starts: half the slot's keys go over, and the lease lapses mid-move.
    target.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", owner_id)
    owner.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", target_id)
    migrate(owner, target, slot, owner.execute_command("CLUSTER COUNTKEYSINSLOT", slot) // 2)
    wait_until(lambda: ms(owner) > deadline_ms, "the lease lapsed by the Redis clock", 30)
    failed = len(re.findall(FAILED_PASS, reaper.log))
    wait_until(lambda: len(re.findall(FAILED_PASS, reaper.log)) > failed, "a pass failed", 30)

    # The move ends right after a failed pass; the reaper runs a whole pass past it (its next
    # pass has started: each opens with an INFO to every primary) before the worker renews.
    migrate(owner, target, slot, 1000)
    for node in cluster.live():  # every primary learns the new owner, as reshard tells them
        with redis.Redis(port=node.port, decode_responses=True) as client:
            if client.info("replication")["role"] == "master":
                client.execute_command("CLUSTER SETSLOT", slot, "NODE", target_id)
    passes = info_calls_by_others(target)
    wait_until(lambda: passes() >= 2, "a reap pass after the move, and the next one started")

    assert broker.renew(WORKER, [lease]) == [], reaper.log  # the lease was still its worker's
    finish(backend, lease, Outcome.SUCCESSFUL, '"moved"')
    result.refresh()
    assert (result.status, result.errors) == (TaskResultStatus.SUCCESSFUL, [])
    assert target.execute_command("CLUSTER COUNTKEYSINSLOT", slot) > 0
    held = re.search(r"Expired leases held hold_s=\S+ reason=(.*?) \(live workers", reaper.log)
    assert held is not None, reaper.log
    assert "hash slot" in held[1]
