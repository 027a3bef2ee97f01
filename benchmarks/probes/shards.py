"""Measure one hot queue on a local 3+3 Redis Cluster, unsharded and split by queue_shards.

Run ``python -m benchmarks.probes.shards [--tasks N] [--processes P] [--threads T]`` from the
repository root. It creates a local cluster (tests/servers/redis_cluster.py) and, for each shard
count (1 = unsharded, 3 and 6), enqueues N echo tasks to "default" one ``enqueue()`` at a time
(or ``--enqueue-batch`` per ``enqueue_many``), then drains them with one real
``threadmill_worker --burst`` (P processes x T threads). Per phase it prints tasks/s, the
client calls per task (EVALSHA and BLPOP from INFO commandstats: every pipeline to a node
carries at least one, so these bound the round trips from above) and each primary's Redis CPU
per task (INFO cpu used_cpu_sys + used_cpu_user deltas).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django
import redis

from benchmarks.harness.redis_stats import RedisSnapshot, snapshot
from django_threadmill.broker.keys import KeySpace, queue_parts
from tests.servers.redis_cluster import LocalCluster, local_cluster

ROOT = Path(__file__).resolve().parents[2]
CLIENT_CALLS = ("evalsha", "blpop")  # sent by the client, never from inside a script


def primaries(cluster: LocalCluster) -> list[redis.Redis]:
    clients = [redis.Redis(port=node.port) for node in cluster.live()]
    return [c for c in clients if c.info("replication")["role"] == "master"]


def snapshots(nodes: list[redis.Redis]) -> list[RedisSnapshot]:
    return [snapshot(node) for node in nodes]


def per_task(
    before: list[RedisSnapshot], after: list[RedisSnapshot], tasks: int, seconds: float
) -> dict[str, object]:
    """Return tasks/s, client calls per task and each primary's CPU µs per task."""
    calls = {
        name: sum(
            a.calls.get(name, 0) - b.calls.get(name, 0) for b, a in zip(before, after, strict=True)
        )
        for name in CLIENT_CALLS
    }
    cpu_us = [1e6 * (a.cpu_s - b.cpu_s) / tasks for b, a in zip(before, after, strict=True)]
    return {
        "tasks/s": round(tasks / seconds),
        **{f"{name}/task": round(count / tasks, 4) for name, count in calls.items()},
        "cpu µs/task per primary": [round(us, 1) for us in cpu_us],
        "cpu µs/task total": round(sum(cpu_us), 1),
    }


def placement(cluster: LocalCluster, prefix: str, shards: int, ports: list[int]) -> list[int]:
    """Return how many of the queue's shards each primary serves, in ``ports`` order."""
    parts = queue_parts("default", "default", shards)
    served = [cluster.primary_for(KeySpace(prefix, "default").queue(p).ready).port for p in parts]
    return [served.count(port) for port in ports]


def options(shards: int) -> dict[str, object]:
    return {"cluster": True, "queue_shards": {"default": shards}}


def enqueue_all(url: str, prefix: str, shards: int, count: int, batch: int) -> float:
    """Enqueue ``count`` echo tasks, ``batch`` per call; return the seconds taken."""
    from django_threadmill.backend import ThreadmillTaskBackend
    from testproject.example.tasks import echo

    backend = ThreadmillTaskBackend(
        "default",
        {"LOCATION": url, "QUEUES": ["default"],
         "OPTIONS": {"key_prefix": prefix, **options(shards)}},
    )  # fmt: skip
    backend.broker.register_queues(["default"])
    started = time.perf_counter()
    for first in range(0, count, batch):
        if batch == 1:
            backend.enqueue(echo, [first], {})
        else:
            calls = [([index], {}) for index in range(first, min(first + batch, count))]
            backend.enqueue_many(echo, calls)
    return time.perf_counter() - started


def drain(url: str, prefix: str, shards: int, processes: int, threads: int) -> float:
    """Run one worker command with --burst until the queue is empty; return the seconds."""
    env = {
        **os.environ,
        "REDIS_URL": url,
        "THREADMILL_KEY_PREFIX": prefix,
        "THREADMILL_QUEUES": "default,emails,reports",  # the example tasks name them
        "THREADMILL_OPTIONS": json.dumps(options(shards)),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", "threadmill_worker", "--processes", str(processes),
         "--threads", str(threads), "--prefetch", "128", "--burst", "--queue", "default"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the worker failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--shards", default="1,3,6")
    parser.add_argument("--enqueue-batch", type=int, default=1, help="tasks per enqueue call")
    args = parser.parse_args()
    django.setup()
    with local_cluster() as cluster:
        nodes = primaries(cluster)
        ports = [node.connection_pool.connection_kwargs["port"] for node in nodes]
        print(f"local 3+3 cluster, primaries {ports}; {args.tasks} tasks, {args.enqueue_batch} "
              f"per enqueue call, worker {args.processes}x{args.threads}")  # fmt: skip
        for shards in (int(n) for n in args.shards.split(",")):
            prefix = f"shards{shards}-{uuid.uuid4().hex[:6]}"
            print(
                f"shards={shards} shards per primary: {placement(cluster, prefix, shards, ports)}"
            )
            before = snapshots(nodes)
            seconds = enqueue_all(cluster.url, prefix, shards, args.tasks, args.enqueue_batch)
            middle = snapshots(nodes)
            drain_s = drain(cluster.url, prefix, shards, args.processes, args.threads)
            after = snapshots(nodes)
            for phase, figures in (
                ("enqueue", per_task(before, middle, args.tasks, seconds)),
                ("worker", per_task(middle, after, args.tasks, drain_s)),
            ):
                print(f"shards={shards} {phase:8} {json.dumps(figures, ensure_ascii=False)}")


if __name__ == "__main__":
    main()
