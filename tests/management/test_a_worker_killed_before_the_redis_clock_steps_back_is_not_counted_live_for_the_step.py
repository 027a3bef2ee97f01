"""A worker killed before the Redis clock steps back is not counted live for the step.

A process's heartbeat is its renewal, dated on the Redis clock, and a process counted live while
its last one was at most ``lease_ttl`` old. When Redis's host steps its clock back (NTP
correcting a clock that ran fast, a failover to a replica whose clock lags), a renewal made
before the step is dated ahead of the clock, and its age reads below zero: a worker killed
(its whole process group, so no supervisor signed it off) right before an hour's step back was
counted live by ``threadmill_health`` and the admin for the hour and its lease
(``Healthy … live=1``). A renewal dated more than a lease ahead now counts for nothing; a live
worker renews within a third of a lease, on the new clock, and counts again.

The Redis server runs under the clock shim of the reaper's jump-ahead test, which steps its wall
clock.
"""

import os
import re
import signal
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.management.health import HealthCode
from tests.admin.conftest import QUEUES_URL, logged_in, page, staff_user
from tests.lifecycle.test_a_reaper_holds_when_the_redis_clock_jumps_ahead import (
    ShiftedRedis,
    redis_url,
    shifted_redis,
)
from tests.management.test_health import HOST, Probe, probe_at, until_exit
from tests.support import Command, running, wait_until

__all__ = ["redis_url", "shifted_redis"]  # this module runs on the server whose clock it steps
pytestmark = pytest.mark.timeout(120)

LEASE_TTL_S = 6.0  # renewed every 2 s
STEP_S = -3600  # the Redis clock set an hour back
WORKER = ("--queue", "default", "--threads", "1", "--reap-interval", "0")


def probe(redis_url: str, key_prefix: str) -> Probe:
    """Return a ``threadmill_health --queue default`` runner for this module's lease."""
    return lambda *args: probe_at(
        redis_url, key_prefix, "--queue", "default", *args, lease_ttl_s=LEASE_TTL_S
    )


def sighting(redis_client: redis.Redis, broker: Broker) -> tuple[str, float]:
    """Return the one worker sighted in the default queue, with its renewal time (ms)."""
    [(worker_id, score)] = redis_client.zrange(
        broker.queue_keys("default").workers, 0, -1, withscores=True
    )
    return worker_id, score


def kill_the_whole_worker(worker: Command) -> None:
    """SIGKILL the supervisor and its process, the supervisor stopped first: it signs off a
    child it sees die, and a group killed at once leaves its sightings behind."""
    os.kill(worker.process.pid, signal.SIGSTOP)
    for pid in worker.child_pids():
        os.kill(pid, signal.SIGKILL)
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.wait()


def test_a_worker_killed_before_an_hours_step_back_reads_dead_in_health_and_the_admin(
    redis_url: str,
    key_prefix: str,
    broker: Broker,
    redis_client: redis.Redis,
    shifted_redis: ShiftedRedis,
    start_worker: Callable[..., Command],
    db: None,
) -> None:
    health = probe(redis_url, key_prefix)
    worker = start_worker(*WORKER, lease_ttl_s=LEASE_TTL_S)
    try:
        worker.wait_for_log("Worker process started")
        until_exit(health, HealthCode.HEALTHY)
        kill_the_whole_worker(worker)
    finally:
        worker.close()
    worker_id, renewed_ms = sighting(redis_client, broker)
    shifted_redis.step(STEP_S)

    probed = health()
    assert probed.returncode == HealthCode.TOO_FEW, probed.stdout
    stderr = probed.stderr
    assert f"Unhealthy host={HOST} live=0 min_processes=1 queues=default" in stderr
    ahead = re.search(r" last_seen=(\d+\.\d)s_ahead live_elsewhere=0: ", stderr)
    assert ahead, stderr
    assert LEASE_TTL_S < float(ahead.group(1)) <= -STEP_S, stderr  # the step, less the wait
    assert stderr.rstrip().endswith(
        "This host was last seen ahead of the Redis clock, which stepped back since (NTP, a "
        "failover to a replica whose clock lags): such a renewal is not counted, and a live "
        "process renews again within lease_ttl / 3 (2s)."
    ), stderr

    queues_page = page(logged_in(staff_user("operator", "view_queue")), QUEUES_URL)
    assert worker_id.split(":")[1] in queues_page
    said = re.search(r"(\d+) min \d+ s ahead of the Redis clock, which stepped back", queues_page)
    assert said, queues_page  # it said "0 s ago"
    assert LEASE_TTL_S < int(said.group(1)) * 60 <= -STEP_S, queues_page
    assert sighting(redis_client, broker) == (worker_id, renewed_ms)  # the probe wrote nothing


def test_a_live_worker_counts_again_once_it_renews_on_the_stepped_back_clock(
    redis_url: str,
    key_prefix: str,
    broker: Broker,
    redis_client: redis.Redis,
    shifted_redis: ShiftedRedis,
    start_worker: Callable[..., Command],
) -> None:
    health = probe(redis_url, key_prefix)
    with running(start_worker(*WORKER, lease_ttl_s=LEASE_TTL_S)):
        until_exit(health, HealthCode.HEALTHY)
        shifted_redis.step(STEP_S)
        wait_until(
            lambda: sighting(redis_client, broker)[1] <= broker.server_time_ms(),
            "the worker renewing on the stepped-back clock",
        )
        healthy = health()
    assert healthy.returncode == HealthCode.HEALTHY, healthy.stderr
    assert f"Healthy host={HOST} live=1 " in healthy.stdout
