"""Helpers shared by the lifecycle tests: waiting with a deadline and playing a worker."""

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis

from django_threadmill.broker import Broker, Finish, Lease, Outcome, Reservation, Start
from django_threadmill.records import now_ms

WORKER = "test-worker-1"
ROOT = Path(__file__).resolve().parents[2]  # the checkout, where manage.py lives


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` never happened."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s}s")
        time.sleep(0.01)  # polling with a deadline, not synchronising


def reserve(broker: Broker, queue: str = "default", count: int = 1000) -> list[Reservation]:
    """Reserve up to ``count`` ready tasks of ``queue``, as a prefetcher does."""
    return broker.acquire(queue, count).reservations


def run(broker: Broker, queue: str = "default", worker: str = WORKER) -> list[Lease]:
    """Reserve and start every ready task of ``queue``; return their leases."""
    leases = [reservation.lease for reservation in reserve(broker, queue)]
    assert broker.start(worker, [Start(lease=lease, started_ms=now_ms()) for lease in leases]) == []
    return leases


def ack(broker: Broker, lease: Lease, outcome: Outcome = Outcome.SUCCESSFUL) -> bool:
    """Record an outcome for ``lease`` as its worker would; return False if it was stale."""
    value = (
        "null" if outcome is Outcome.SUCCESSFUL else '{"exception_class_path":"x","traceback":""}'
    )
    finish = Finish(
        lease=lease, outcome=outcome, value=value, started_ms=now_ms(), finished_ms=now_ms()
    )
    return broker.finish(WORKER, [finish]) == []


def wait_for_expiry(broker: Broker, redis_client: redis.Redis, queue: str = "default") -> None:
    """Wait until every lease of ``queue`` is past its deadline by the Redis clock."""
    leases = broker.queue_keys(queue).leases
    latest = redis_client.zrange(leases, -1, -1, withscores=True)
    assert latest, f"no lease is held in queue {queue!r}"
    deadline_ms = latest[0][1]

    def redis_now_ms() -> float:
        seconds, micros = redis_client.time()
        return seconds * 1000 + micros / 1000

    wait_until(lambda: redis_now_ms() > deadline_ms, f"lease expiry in queue {queue!r}")


def manage(
    redis_url: str, key_prefix: str, *args: str, lease_ttl_s: float = 0.2
) -> subprocess.Popen[str]:
    """Start ``manage.py <args>`` in its own session, on the test's Redis and key prefix.

    Its own session lets a test SIGKILL the whole process group (supervisor and children).
    """
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "THREADMILL_KEY_PREFIX": key_prefix,
        "THREADMILL_LEASE_TTL": str(lease_ttl_s),
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
