"""A dead worker's tasks are settled within ``lease_ttl`` after the Redis clock steps back.

Leases lapse on the Redis clock. When Redis's host steps its clock back (NTP correcting a clock
that ran fast, a host booted with its hardware clock on local time, a failover to a replica
whose clock lags), every deadline written before the step lies that much further ahead. A
worker killed after an hour's step back kept its running task RUNNING for an hour and 6 s
instead of 6 s: no reap pass found its lease expired before then. A reap call now sees the step
(a worker's renewal dated ahead of the clock) and brings such deadlines to ``lease_ttl`` from
now, as a renewal would; the live worker beside it renews its own and runs its task once.

After a restart the reapers noted, the same step put the note's date ahead of the clock: every
reaping loop held expired leases for the step and its renewal interval ("first seen -3597.1s
ago", ``hold_s=3601``), the tasks of a worker that died after the step too. The note is dated
again, and the hold lasts its renewal interval and slack (docs/lifecycle.md, After an outage or
a stall).

The Redis server runs under the clock shim of the jump-ahead test, which steps its wall clock.
"""

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, run_to_completion, wait_until, worker

from .support import run, wait_for_expiry
from .tasks import plain
from .test_a_reaper_holds_when_the_redis_clock_jumps_ahead import (
    ShiftedRedis,
    redis_url,
    shifted_redis,
)
from .test_reaper_holds_after_an_outage_or_a_stall import (
    gated,
    lease_deadline_ms,
    record,
    redis_now_ms,
)

__all__ = ["redis_url", "shifted_redis"]  # this module runs on the server whose clock it steps
pytestmark = pytest.mark.timeout(120)

LEASE_TTL_S = 6.0  # renewed every 2 s; a reaper's hold lasts that and 2 s of slack: 4 s
STEP_S = -3600  # the Redis clock set an hour back
SETTLED = "Lease expired, task FAILED task_id={}"


@contextmanager
def reaper(redis_url: str, key_prefix: str) -> Iterator[Command]:
    """Run ``threadmill_reap`` every 0.3 s for the block; then stop it, exit 0."""
    command = Command(
        redis_url, key_prefix, "threadmill_reap", "--interval", "0.3", lease_ttl_s=LEASE_TTL_S
    )
    try:
        yield command
        command.signal()
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def test_a_worker_killed_after_the_step_has_its_task_settled_and_a_live_one_runs_on(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    shifted_redis: ShiftedRedis,
) -> None:
    gate, runs = tmp_path / "gate", tmp_path / "runs"
    dead_id = gated.using(queue_name="emails").enqueue(str(gate), str(runs)).id
    live_id = gated.enqueue(str(gate), str(runs)).id
    one = ("--threads", "1", "--reap-interval", "0")  # the reaper below reaps alone
    doomed = worker(redis_url, key_prefix, *one, "--queue", "emails", lease_ttl_s=LEASE_TTL_S)
    live = worker(redis_url, key_prefix, *one, "--queue", "default", lease_ttl_s=LEASE_TTL_S)
    try:
        wait_until(
            lambda: all(
                record(broker, redis_client, task_id).get("state") == "running"
                for task_id in (dead_id, live_id)
            ),
            "both tasks running",
        )
        shifted_redis.step(STEP_S)
        for pid in [*doomed.child_pids(), doomed.process.pid]:
            os.kill(pid, signal.SIGKILL)
        doomed.wait()
        deadline_ms = redis_client.zscore(broker.queue_keys("emails").leases, dead_id)
        assert deadline_ms is not None
        assert deadline_ms > redis_now_ms(redis_client) - STEP_S  # an hour ahead, as written

        with reaper(redis_url, key_prefix) as reaping:
            reaping.wait_for_log(SETTLED.format(dead_id))
            gate.touch()
            wait_until(
                lambda: backend.get_result(live_id).status == TaskResultStatus.SUCCESSFUL,
                "the live worker's task finished",
            )
            assert f"task_id={live_id}" not in reaping.log, reaping.log
        dead = backend.get_result(dead_id)
        assert dead.status == TaskResultStatus.FAILED
        assert dead.errors[0].exception_class_path == "django_threadmill.exceptions.LeaseExpired"
        assert backend.get_result(live_id).attempts == 1
        assert "Ack not recorded" not in live.log, live.log
        assert len(runs.read_text().split()) == 2  # each task ran once
        live.signal()
        assert live.wait(30) == 0, live.log
    finally:
        gate.touch()
        doomed.close()
        live.close()


def test_a_reaper_holds_a_renewal_interval_not_the_step_after_a_restart_it_noted(
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    shifted_redis: ShiftedRedis,
) -> None:
    once = ("threadmill_reap", "--once")
    run_to_completion(Command(redis_url, key_prefix, *once, lease_ttl_s=LEASE_TTL_S))
    redis_client.save()  # the server restarts with its data: a new run_id, noted by a pass
    shifted_redis.kill()
    shifted_redis.start()
    noted = run_to_completion(Command(redis_url, key_prefix, *once, lease_ttl_s=LEASE_TTL_S))
    assert "a new Redis server (restarted or failed over), first seen 0.0s ago" in noted
    shifted_redis.step(STEP_S)
    dead_id = plain.enqueue().id
    run(broker)  # a worker that starts the task after the step, then dies
    wait_for_expiry(broker, redis_client)

    with reaper(redis_url, key_prefix) as reaping:
        held = reaping.wait_for_log(r"Expired leases held hold_s=(\S+) reason=(.*?) \(live")
        assert held.groups() == (
            "4",
            "a new Redis server (restarted or failed over), first seen 0.0s ago",
        ), reaping.log
        reaping.wait_for_log(SETTLED.format(dead_id))
    assert lease_deadline_ms(broker, redis_client, dead_id) is None
