"""Measure what a lone call costs the client: CPU per finish call of one result, and per
acquire of one task, over the pooled client and over a thread's own connection.

Run ``python -m benchmarks.probes.lone_calls`` from the repository root. It starts a throwaway
redis-server, then, in rounds that alternate the two ways, reserves ``--calls`` tasks one
acquire at a time and finishes them one finish call at a time, timing each phase with
``time.thread_time()`` (this thread's CPU: Python, redis-py and the socket's system calls).
It prints the medians over ``--repeat`` rounds, in µs per call. The worker's ack writer and
prefetcher make such calls (docs/worker.md, A connection of its own).
"""

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.core_costs import WORKER, success, warm_up
from django_threadmill.broker import Broker, Lease
from tests.servers.redis_server import redis_process


def cpu_us_per_call(calls: int, call: Callable[[int], None]) -> float:
    """Run ``call(n)`` for n in range(calls); return this thread's CPU per call, in µs."""
    started = time.thread_time()
    for n in range(calls):
        call(n)
    return (time.thread_time() - started) * 1e6 / calls


def one_round(broker: Broker, calls: int, way: AbstractContextManager[None]) -> tuple[float, float]:
    """Enqueue ``calls`` echo tasks, then reserve and finish them one call each inside
    ``way``; return the CPU per acquire call and per finish call."""
    from testproject.example.tasks import echo

    for n in range(calls):
        echo.enqueue(n)
    leases: list[Lease] = []

    def acquire(_: int) -> None:
        [reservation] = broker.acquire("default", 1).reservations
        leases.append(reservation.lease)

    def finish(n: int) -> None:
        assert broker.finish(WORKER, [success(leases[n], n)]) == []

    with way:
        acquired = cpu_us_per_call(calls, acquire)
        finished = cpu_us_per_call(calls, finish)
    broker.send_metrics()
    return acquired, finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5_000, help="calls of each kind per round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of each way")
    options = parser.parse_args()
    with redis_process("--appendonly", "no") as server:
        os.environ["REDIS_URL"] = server.url
        os.environ["THREADMILL_KEY_PREFIX"] = f"tmlone-{uuid.uuid4().hex[:8]}"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
        import django

        django.setup()
        from django_threadmill.compat import task_backends
        from testproject.example.tasks import echo

        broker = task_backends["default"].broker
        warm_up(broker, echo)
        ways: dict[str, list[tuple[float, float]]] = {"pooled": [], "own connection": []}
        for _ in range(options.repeat):
            ways["pooled"].append(one_round(broker, options.calls, nullcontext()))
            ways["own connection"].append(one_round(broker, options.calls, broker.pinned()))
    print(f"client CPU µs per call, median of {options.repeat} rounds of {options.calls}")
    print(f"{'way':<16}{'acquire of 1':>14}{'finish of 1':>14}")
    for way, rounds in ways.items():
        acquired = statistics.median(a for a, _ in rounds)
        finished = statistics.median(f for _, f in rounds)
        print(f"{way:<16}{acquired:>14.1f}{finished:>14.1f}")


if __name__ == "__main__":
    main()
