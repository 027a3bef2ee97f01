"""Chaos: kill workers, Redis and connections at random; no task is lost, stuck or run twice.

Runs alone with ``pytest tests/chaos``. THREADMILL_CHAOS=long makes it a long run and
THREADMILL_CHAOS_SEED=<n> replays a seed's choices (the timing of a real run still varies).
THREADMILL_CHAOS_REPORT=<file> appends the run's figures there as one JSON line.
"""

import json
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.servers.redis_server import DURABLE, RedisProcess, redis_process
from tests.support import Command, wait_until, worker

from .accounting import Audit, Ledger
from .load import enqueue_waves
from .monkey import ChaosCounts, ChaosMonkey
from .plan import ChaosPlan, chaos_plan

PLAN = chaos_plan()
LEASE_TTL_S = 2.0  # short, so dead workers are noticed quickly; renewed every third of it
MEAN_WAVE_GAP_S = 0.225  # the mean of load.py's pace between waves
COUNTED = (
    "tasks",
    "orphans",
    "successful",
    "failed",
    "queued",
    "executions",
    "duplicates",
    "fenced",
    "lost",
)


@pytest.fixture(scope="module")
def chaos_redis() -> Iterator[RedisProcess]:
    with redis_process(*DURABLE) as server:
        yield server


@pytest.fixture
def redis_url(chaos_redis: RedisProcess) -> str:
    return chaos_redis.url


def pending(broker: Broker) -> int:
    """Count tasks still ready, delayed, reserved or running, on every queue."""
    total = 0
    for queue in broker.queues():
        keys = broker.queue_keys(queue)
        for key in (keys.ready, keys.delayed, keys.leases):
            total += broker.client.zcard(key)
    return total


def report(plan: ChaosPlan, counts: ChaosCounts, ledger: Ledger, worker_code: int) -> str:
    figures = {
        "seed": plan.seed,
        "mode": plan.mode,
        "sync_ack": plan.sync_ack,
        "kills": counts.kills,
        "redis_restarts": counts.redis_restarts,
        "client_kills": counts.client_kills,
        "worker_exit_code": worker_code,
        **{name: getattr(ledger, name) for name in COUNTED},
        "failed_by": dict(ledger.failed_by),
        "problems": len(ledger.problems),
    }
    line = json.dumps(figures)
    if os.environ.get("THREADMILL_CHAOS_REPORT"):
        with open(os.environ["THREADMILL_CHAOS_REPORT"], "a") as out:
            out.write(line + "\n")
    return line


def start_commands(redis_url: str, key_prefix: str) -> tuple[Command, Command]:
    """Start the supervisor (reaping every half second) and a threadmill_reap beside it."""
    supervisor = worker(
        redis_url,
        key_prefix,
        *("--processes", str(PLAN.processes), "--threads", str(PLAN.threads)),
        *("--prefetch", "8", "--reap-interval", "0.5", "--grace-period", "10"),
        *("--max-tasks", "400", "--max-tasks-jitter", "200"),
        *(["--sync-ack"] if PLAN.sync_ack else []),
        lease_ttl_s=LEASE_TTL_S,
    )
    reaper = Command(
        redis_url, key_prefix, "threadmill_reap", "--interval", "0.3", lease_ttl_s=LEASE_TTL_S
    )
    return supervisor, reaper


@dataclass(frozen=True, slots=True)
class ChaosRun:
    """What one run left behind for the audit."""

    enqueued: set[str]
    worker_code: int
    supervisor_log: str


def under_fire(backend: ThreadmillTaskBackend, monkey: ChaosMonkey, log: Path) -> set[str]:
    """Enqueue the plan's tasks while the monkey works, and keep it working the planned time."""
    chaos_ends = time.monotonic() + PLAN.chaos_s
    monkey.start()
    try:
        enqueued = enqueue_waves(
            backend,
            random.Random(PLAN.seed),
            log,
            total=PLAN.tasks,
            waves=max(1, int(PLAN.chaos_s * 0.7 / MEAN_WAVE_GAP_S)),
            pace=threading.Event().wait,
        )
        monkey.stopping.wait(max(0.0, chaos_ends - time.monotonic()))
    finally:
        monkey.stop()
    return enqueued


def run_chaos(
    backend: ThreadmillTaskBackend, server: RedisProcess, key_prefix: str, log: Path
) -> tuple[ChaosRun, ChaosMonkey]:
    """Run workers and a reaper under fire, let them drain, stop them; return what is left."""
    supervisor, reaper = start_commands(server.url, key_prefix)
    monkey_rng = random.Random(PLAN.seed + 1)
    monkey = ChaosMonkey(monkey_rng, supervisor, server, max_redis_restarts=PLAN.max_redis_restarts)
    try:
        supervisor.wait_for_log("Worker process started")
        enqueued = under_fire(backend, monkey, log)
        try:
            wait_until(lambda: pending(backend.broker) == 0, "all settled", PLAN.drain_timeout_s)
        except AssertionError as exc:
            print(f"{exc}; still pending={pending(backend.broker)} (audited as queued)")
        supervisor.signal(signal.SIGTERM)
        reaper.signal(signal.SIGTERM)
        worker_code = supervisor.wait(60)
        reaper.wait(60)
        return ChaosRun(enqueued, worker_code, supervisor.log), monkey
    finally:
        supervisor.close()
        reaper.close()


@pytest.mark.timeout(PLAN.timeout_s)
def test_chaos_accounting(
    backend: ThreadmillTaskBackend,
    chaos_redis: RedisProcess,
    redis_client: redis.Redis,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    print(f"\nchaos mode={PLAN.mode} seed={PLAN.seed} (replay: THREADMILL_CHAOS_SEED={PLAN.seed})")
    log = tmp_path / "runs.log"
    run, monkey = run_chaos(backend, chaos_redis, key_prefix, log)
    audit = Audit(redis_client, backend.broker, monkey.counts.killed_pids, run.supervisor_log)
    ledger = audit.run(run.enqueued, log)
    print("chaos figures " + report(PLAN, monkey.counts, ledger, run.worker_code))
    assert not ledger.problems, f"seed={PLAN.seed}\n" + "\n".join(ledger.problems[:50])
    assert ledger.lost == 0
    assert run.worker_code == 0, run.supervisor_log[-5000:]
