"""Measure how fast the reaper settles expired leases (leases settled per second).

Run ``python -m benchmarks.probes.reap_throughput`` from the repository root. It uses
``REDIS_URL`` or starts a throwaway redis-server, then for each case builds ``--leases`` expired
leases of the example ``echo`` task and times one ``reap_once`` pass:

- running:  reserved and started (a SIGKILLed worker's attempts): each is settled through
            the fenced finish script as FAILED with a LeaseExpired error;
- reserved: reserved, never started (a dead worker's prefetch): each goes back to READY.

The reaper logs one line per failed attempt (ERROR, as shipped); ``--no-logs`` silences the
``django_threadmill`` logger to show the cost without it. Keys are deleted afterwards.
"""

import argparse
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import django
import redis

from tests.servers.redis_server import redis_process

WORKER = "reap-bench-worker"
LEASE_TTL_S = 1.0  # short, so the built leases expire soon after they are built
CHUNK = 1000  # tasks per enqueue, acquire and start call while building the leases


def build_leases(backend: object, count: int, *, start: bool) -> None:
    """Enqueue ``count`` echo tasks, reserve them all, and start them if ``start``."""
    from django_threadmill.broker import Start
    from django_threadmill.codec.times import now_ms
    from testproject.example.tasks import echo

    broker = backend.broker  # type: ignore[attr-defined]
    backend.enqueue_many(echo, [((n,), {}) for n in range(count)])  # type: ignore[attr-defined]
    reserved = 0
    while reserved < count:
        leases = [r.lease for r in broker.acquire("default", CHUNK).reservations]
        assert leases, "the queue ran dry before every task was reserved"
        reserved += len(leases)
        if start:
            broker.start(WORKER, [Start(lease=lease, started_ms=now_ms()) for lease in leases])


def wait_for_expiry(client: redis.Redis, leases_key: str) -> None:
    """Wait until the latest lease deadline has passed on the Redis clock."""
    [(_, deadline_ms)] = client.zrange(leases_key, -1, -1, withscores=True)
    while True:
        seconds, micros = client.time()
        if seconds * 1000 + micros / 1000 > deadline_ms:
            return
        time.sleep(0.05)  # waiting for a clock, with nothing else to wait on


def redis_cpu_s(client: redis.Redis) -> float:
    """Return the CPU seconds the Redis server has used so far (user + system)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def measure(name: str, count: int, batch_size: int, build: Callable[[], None]) -> None:
    from django_threadmill.compat import task_backends
    from django_threadmill.worker.reaper import reap_once

    backend = task_backends["default"]
    build()
    client = backend.broker.client
    wait_for_expiry(client, backend.broker.queue_keys("default").leases)
    server_cpu_s = redis_cpu_s(client)
    client_cpu_s = time.process_time()
    began = time.perf_counter()
    report = reap_once(backend, batch_size=batch_size)
    elapsed = time.perf_counter() - began
    client_cpu_s = time.process_time() - client_cpu_s
    server_cpu_s = redis_cpu_s(client) - server_cpu_s
    settled = report.failed + report.retried + report.released
    assert settled == count, f"{name}: settled {settled} of {count}"
    print(
        f"case={name} leases={count} batch_size={batch_size} seconds={elapsed:.3f} "
        f"settled_per_s={settled / elapsed:,.0f} us_per_lease={elapsed / settled * 1e6:.1f} "
        f"client_cpu_us_per_lease={client_cpu_s / settled * 1e6:.1f} "
        f"redis_cpu_us_per_lease={server_cpu_s / settled * 1e6:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leases", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--no-logs", action="store_true", help="silence django_threadmill logs")
    args = parser.parse_args()

    with ExitStack() as stack:
        url = os.environ.get("REDIS_URL") or stack.enter_context(redis_process()).url
        prefix = f"reapbench-{uuid.uuid4().hex[:8]}"
        os.environ.update(
            REDIS_URL=url,
            THREADMILL_KEY_PREFIX=prefix,
            THREADMILL_LEASE_TTL=str(LEASE_TTL_S),
            DJANGO_SETTINGS_MODULE="testproject.settings",
        )
        django.setup()
        if args.no_logs:
            logging.getLogger("django_threadmill").setLevel(logging.CRITICAL + 1)
        from django_threadmill.compat import task_backends

        backend = task_backends["default"]
        client = redis.Redis.from_url(url)
        stack.callback(lambda: [client.delete(k) for k in client.scan_iter(f"{prefix}:*")])
        print(f"redis={client.info('server')['redis_version']} python={sys.version.split()[0]}")
        measure(
            "running",
            args.leases,
            args.batch_size,
            lambda: build_leases(backend, args.leases, start=True),
        )
        measure(
            "reserved",
            args.leases,
            args.batch_size,
            lambda: build_leases(backend, args.leases, start=False),
        )


if __name__ == "__main__":
    main()
