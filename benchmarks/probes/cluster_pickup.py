"""Measure pickup on a Redis Cluster: enqueue to an idle waiter's wake-up, one slot or several.

Run ``python -m benchmarks.probes.cluster_pickup [--samples N]`` from the repository root. It
creates a local 3+3 cluster (tests/servers/redis_cluster.py) and times, N times each, from just
before an enqueue until ``Broker.wait_for_work`` returns in another thread: for a worker of one
queue (one BLPOP) and of five queues on three nodes (one waiter thread per slot).
"""

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django

from tests.servers.redis_cluster import local_cluster

QUEUES = ("images", "billing", "default", "emails", "reports")  # slots on three primaries


def pickup_ms(url: str, queues: tuple[str, ...], samples: int) -> list[float]:
    """Return one enqueue-to-wake-up time per sample, in milliseconds."""
    from django_threadmill.backend import ThreadmillTaskBackend
    from testproject.example.tasks import echo

    backend = ThreadmillTaskBackend(
        "default",
        {"LOCATION": url, "QUEUES": list(QUEUES),
         "OPTIONS": {"cluster": True, "key_prefix": f"pickup{len(queues)}"}},
    )  # fmt: skip
    broker = backend.broker
    broker.register_queues(queues)
    times: list[float] = []
    for index in range(samples):
        woke = threading.Event()
        waiter = threading.Thread(
            target=lambda woke=woke: broker.wait_for_work(queues, "bench", 5) and woke.set()
        )
        waiter.start()
        time.sleep(0.01)  # let the waiter block first: this measures an idle worker's pickup
        started = time.perf_counter()
        backend.enqueue(echo.using(queue_name=queues[index % len(queues)]), [index], {})
        woke.wait(5)
        times.append(1000 * (time.perf_counter() - started))
        waiter.join()
        broker.acquire(queues[index % len(queues)], 10)  # keep the queues empty
    broker.wake_process(queues, "bench")  # stops the waiter threads of several slots
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    os.environ["THREADMILL_QUEUES"] = ",".join(QUEUES)  # echo.using(queue_name=...) validates
    django.setup()
    with local_cluster() as cluster:
        for queues in (("default",), QUEUES):
            times = sorted(pickup_ms(cluster.url, queues, args.samples))
            p95 = times[int(0.95 * len(times)) - 1]
            print(f"queues={len(queues)} pickup p50={statistics.median(times):.2f} ms "
                  f"p95={p95:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
