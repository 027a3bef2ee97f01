"""A reaper holds off settling expired leases after Redis was away, or after it was stalled.

Leases lapse on the Redis clock, which runs on through a paused VM (the whole host stalls, the
workers and the reaper with it) and while Redis is away (no worker can renew). The reaper's
first pass after either settled the running task of a live worker: FAILED LeaseExpired, and
the worker's outcome was then refused ("Ack not recorded ... settled or held by another
owner"). It now holds off for a renewal interval and some slack, and the worker renews first
(docs/lifecycle.md, After an outage or a stall). Each test runs with either reaper:
``threadmill_reap``, and a worker's supervisor reaping every ``--reap-interval``; the last, a
``threadmill_reap --once`` from cron after a restart it could not see.
"""

import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from tests.servers.redis_server import RedisProcess
from tests.support import Command, command_calls, wait_until, worker

from .support import run, state_of, wait_for_expiry
from .tasks import plain

pytestmark = pytest.mark.timeout(90)

LEASE_TTL_S = 6.0  # renewed every 2 s; a hold lasts that and RENEWAL_SLACK_S (2 s): 4 s
# One worker process on one thread; only the reaper beside it reaps.
WORKER = ("--processes", "1", "--threads", "1", "--reap-interval", "0")
# The reapers: the command, and a supervisor reaping every queue, whose worker process serves
# a queue left empty and runs nothing.
REAPERS = {
    "threadmill_reap": ("threadmill_reap", "--interval", "0.3"),
    "supervisor": (
        "threadmill_worker",
        *("--processes", "1", "--threads", "1", "--queue", "reports", "--reap-interval", "0.3"),
    ),
}


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which the outage test kills and restarts."""
    return durable_redis.url


@pytest.fixture(params=REAPERS.values(), ids=REAPERS.keys())
def reaper(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """Run each test with each reaper: the arguments of its ``manage.py`` command."""
    return request.param


@task
def gated(gate: str, runs: str) -> str:
    """Note the run in ``runs``, then work until ``gate`` exists (the test opens it)."""
    with open(runs, "a") as log:
        log.write(f"{os.getpid()}\n")
    while not Path(gate).exists():
        time.sleep(0.01)  # this task stands for long work; the test opens the gate
    return "done"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scene:
    """A worker running ``task_id`` until ``gate`` exists, and a reaper beside it."""

    task_id: str
    worker: Command
    reaper: Command
    gate: Path
    runs: Path

    @property
    def worker_pids(self) -> list[int]:
        """The worker tree: its worker process first, to be thawed before its supervisor."""
        return [*self.worker.child_pids(), self.worker.process.pid]

    @property
    def reaper_worker_pids(self) -> list[int]:
        """The reaper's worker process, if it is a supervisor (its passes run without it)."""
        return self.reaper.child_pids()


@pytest.fixture
def scene(
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    reaper: tuple[str, ...],
) -> Iterator[Scene]:
    """Start a worker on a task that runs until the test opens its gate, and a reaper (the
    ``reaper`` command) that has made a pass; after the test, thaw them all, open the gate,
    and stop them."""
    dead = plain.using(queue_name="emails").enqueue().id
    run(broker, "emails")  # a dead worker's lease: the reaper's first pass is seen to settle it
    gate, runs = tmp_path / "gate", tmp_path / "runs"
    scene = Scene(
        task_id=gated.enqueue(str(gate), str(runs)).id,
        worker=worker(redis_url, key_prefix, *WORKER, lease_ttl_s=LEASE_TTL_S),
        reaper=Command(redis_url, key_prefix, *reaper, lease_ttl_s=LEASE_TTL_S),
        gate=gate,
        runs=runs,
    )
    try:
        wait_until(
            lambda: record(broker, redis_client, scene.task_id).get("state") == "running",
            "the task running",
        )
        scene.reaper.wait_for_log(rf"Lease expired, task FAILED task_id={dead}")
        yield scene
    finally:
        for pid in [*scene.worker_pids, *scene.reaper_worker_pids, scene.reaper.process.pid]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)  # a failed test leaves nothing frozen
        scene.gate.touch()
    try:
        for command in (scene.worker, scene.reaper):
            command.signal()
            assert command.wait(60) == 0, command.log
    finally:
        scene.worker.close()
        scene.reaper.close()


def freeze(pids: list[int]) -> None:
    """SIGSTOP ``pids`` and wait until each is stopped."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: all(state_of(pid) == "T" for pid in pids), f"{pids} frozen")


def thaw(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGCONT)


def freeze_between_passes(reaper: Command) -> None:
    """SIGSTOP the reaper (a supervisor: not its worker process) while its main thread is
    alone, between two passes (each runs in a thread of its own, in either reaper): a pass
    frozen part-way had already chosen to settle leases."""
    pid = reaper.process.pid

    def frozen_between_passes() -> bool:
        freeze([pid])
        if len(os.listdir(f"/proc/{pid}/task")) == 1:
            return True
        thaw([pid])
        return False

    wait_until(frozen_between_passes, "the reaper frozen between two passes")


def record(broker: Broker, redis_client: redis.Redis, task_id: str) -> dict[str, str]:
    key = broker.record_key(task_id)
    assert key is not None
    return redis_client.hgetall(key)


def lease_deadline_ms(broker: Broker, redis_client: redis.Redis, task_id: str) -> float | None:
    return redis_client.zscore(broker.queue_keys("default").leases, task_id)


def redis_now_ms(redis_client: redis.Redis) -> float:
    seconds, micros = redis_client.time()
    return seconds * 1000 + micros / 1000


def assert_held(scene: Scene, reason: str) -> None:
    """Assert the reaper's first pass after the outage or stall held the task's lease: it
    logged the hold for ``reason`` (a pattern), and did not settle the lease."""
    settled = rf"Lease expired, task FAILED task_id={scene.task_id}"
    seen = scene.reaper.wait_for_log(rf"{settled}|Expired leases held .*", timeout_s=30)
    assert not seen[0].startswith("Lease expired"), f"a live lease settled:\n{scene.reaper.log}"
    held = rf"Expired leases held hold_s=4 reason={reason} \(live workers renew theirs meanwhile"
    assert re.match(held, seen[0]), scene.reaper.log


def assert_ran_once_and_recorded(
    scene: Scene, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """Let the thawed worker renew its lease, open the gate, and check the one run's outcome."""
    wait_until(
        lambda: (
            (lease_deadline_ms(broker, redis_client, scene.task_id) or 0)
            > redis_now_ms(redis_client)
        ),
        "the worker's lease renewed",
    )
    scene.gate.touch()
    wait_until(
        lambda: backend.get_result(scene.task_id).status != TaskResultStatus.RUNNING,
        "the task finished",
    )
    result = backend.get_result(scene.task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL, (result.errors, scene.reaper.log)
    assert (result.attempts, result.errors, result.return_value) == (1, [], "done")
    assert len(scene.runs.read_text().split()) == 1
    assert "LeaseExpired" not in str(record(broker, redis_client, scene.task_id))
    assert "Ack not recorded" not in scene.worker.log, scene.worker.log


def test_a_reaper_resumed_with_its_workers_lets_them_renew_before_it_settles(
    scene: Scene, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    freeze_between_passes(scene.reaper)  # a paused VM: every process stops at once
    freeze(scene.worker_pids)
    wait_for_expiry(broker, redis_client)
    thaw([scene.reaper.process.pid])  # the reaper's pass comes first, deterministically
    assert_held(scene, r"this reaper stalled \d+\.\ds")
    thaw(scene.worker_pids)
    assert_ran_once_and_recorded(scene, backend, broker, redis_client)


def test_a_reaper_reconnected_after_an_outage_longer_than_the_lease_lets_workers_renew_first(
    scene: Scene,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    durable_redis: RedisProcess,
) -> None:
    # Redis goes away between two passes: a pass it cut short would hold for another
    # reason ("Redis stopped answering during the last reap pass"). The reaper is frozen
    # for the kill only, far less than the renewal interval a stall would take.
    freeze_between_passes(scene.reaper)
    durable_redis.kill()
    thaw([scene.reaper.process.pid])
    # No renewal came after the kill, and Redis's clock is this host's wall clock.
    latest_deadline = time.time() + LEASE_TTL_S
    wait_until(lambda: time.time() > latest_deadline, "the lease deadline passed")
    # The reaper reaches Redis first, deterministically; a supervisor's worker process is
    # frozen too, as it reads the queues now and then: only the reaper's passes do.
    frozen = [*scene.worker_pids, *scene.reaper_worker_pids]
    freeze(frozen)
    durable_redis.start()
    wait_until(  # the frozen workers send nothing: each pass reads the queues once
        lambda: command_calls(redis_client).get("smembers", 0) >= 2,
        "a reap pass answered after the restart",
    )
    deadline_ms = lease_deadline_ms(broker, redis_client, scene.task_id)
    assert deadline_ms is not None
    assert deadline_ms < redis_now_ms(redis_client), "the lease did not lapse"
    assert_held(
        scene,
        r"Redis did not answer the last reap pass, a new Redis server \(restarted or failed "
        r"over\), first seen \d+\.\ds ago",
    )
    thaw(frozen)
    assert_ran_once_and_recorded(scene, backend, broker, redis_client)


def reap_once(redis_url: str, key_prefix: str, ran: list[Command]) -> Command:
    """Run ``threadmill_reap --once`` to its end, as cron would; return it, exited 0, and add
    it to ``ran`` for the test to close."""
    command = Command(redis_url, key_prefix, "threadmill_reap", "--once", lease_ttl_s=LEASE_TTL_S)
    ran.append(command)
    assert command.wait(60) == 0, command.log
    return command


def test_a_reap_from_cron_after_a_restart_lets_workers_renew_first(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    durable_redis: RedisProcess,
) -> None:
    """A ``--once`` pass saw no outage, and knows no earlier pass of its own: the server that
    the last cron run reached, noted in Redis, tells it Redis restarted since."""
    gate, runs = tmp_path / "gate", tmp_path / "runs"
    task_id = gated.enqueue(str(gate), str(runs)).id
    running = worker(redis_url, key_prefix, *WORKER, lease_ttl_s=LEASE_TTL_S)
    worker_pids: list[int] = []
    cron_runs: list[Command] = []
    try:
        wait_until(
            lambda: record(broker, redis_client, task_id).get("state") == "running",
            "the task running",
        )
        assert "Expired leases held" not in reap_once(redis_url, key_prefix, cron_runs).log
        durable_redis.kill()
        latest_deadline = time.time() + LEASE_TTL_S  # no renewal came after the kill
        wait_until(lambda: time.time() > latest_deadline, "the lease deadline passed")
        worker_pids = [*running.child_pids(), running.process.pid]
        freeze(worker_pids)  # the cron run reaches Redis first, deterministically
        durable_redis.start()
        deadline_ms = lease_deadline_ms(broker, redis_client, task_id)
        assert deadline_ms is not None
        assert deadline_ms < redis_now_ms(redis_client), "the lease did not lapse"
        cron = reap_once(redis_url, key_prefix, cron_runs)
        assert "Lease expired" not in cron.log, cron.log
        assert re.search(
            r"^Expired leases held: a new Redis server \(restarted or failed over\), first seen "
            r"\d+\.\ds ago\. Live workers "
            r"renew theirs meanwhile: run 'manage.py threadmill_reap --once' again in 4s",
            cron.log,
            re.MULTILINE,
        ), cron.log
        thaw(worker_pids)
        scene = Scene(task_id=task_id, worker=running, reaper=cron, gate=gate, runs=runs)
        assert_ran_once_and_recorded(scene, backend, broker, redis_client)
    finally:
        with suppress(ProcessLookupError):
            thaw(worker_pids)
        gate.touch()
        running.signal()
        assert running.wait(30) == 0, running.log
        for command in [running, *cron_runs]:
            command.close()
