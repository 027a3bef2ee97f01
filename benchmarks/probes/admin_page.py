"""Measure the admin's Threadmill pages with a large results index (default: 1,000,000 results).

Run ``python -m benchmarks.probes.admin_page`` from the repository root. It starts a throwaway
redis-server (or uses ``REDIS_URL``), writes ``--results`` finished records straight into the
result index of three queues with pipelines (1% FAILED), then times each page through Django's
test client, logged in as a superuser, and prints the median and 95th percentile per page.
The records look like what the worker writes: payload, state, timestamps, workers, result or
error. Keys are deleted afterwards when ``REDIS_URL`` was given.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import django
import redis

from tests.servers.redis_server import session_redis_url

QUEUE_SHARES = {"default": 0.8, "emails": 0.15, "reports": 0.05}  # of the results written
WRITE_BATCH = 5000  # records per pipeline
SPAN_MS = 20 * 3600 * 1000  # finish times spread over the last 20 hours (inside result_ttl)


def fill(url: str, key_prefix: str, total: int) -> dict[str, list[str]]:
    """Write ``total`` finished records; return a few ids per queue for the detail page."""
    from django_threadmill.broker.keys import KeySpace
    from django_threadmill.codec.ids import make_task_id

    client = redis.Redis.from_url(url)
    space = KeySpace(key_prefix, "default")
    client.sadd(space.queues, *QUEUE_SHARES)
    now_ms = int(time.time() * 1000)
    samples: dict[str, list[str]] = {}
    for queue, share in QUEUE_SHARES.items():
        keys, count = space.queue(queue), int(total * share)
        samples[queue] = []
        for start in range(0, count, WRITE_BATCH):
            pipe = client.pipeline(transaction=False)
            index: dict[str, int] = {}
            for n in range(start, min(start + WRITE_BATCH, count)):
                task_id = make_task_id(uuid.uuid4().hex, queue)
                finished_ms = now_ms - SPAN_MS + (SPAN_MS * n) // count
                pipe.hset(keys.record(task_id), mapping=_record(n, finished_ms))
                index[task_id] = finished_ms
            pipe.zadd(keys.done, index)
            pipe.execute()
            samples[queue] += list(index)[:1]
        print(f"  wrote {count:,} results to queue {queue}", file=sys.stderr)
    client.close()
    return samples


def _record(n: int, finished_ms: int) -> dict[str, str | int]:
    failed = n % 100 == 0
    record: dict[str, str | int] = {
        "payload": json.dumps(
            {"path": "testproject.example.tasks.echo", "args": [n], "kwargs": {}}
        ),
        "state": "failed" if failed else "successful",
        "score": n,
        "token": 1,
        "enqueued_ms": finished_ms - 40,
        "started_ms": finished_ms - 5,
        "attempted_ms": finished_ms - 5,
        "finished_ms": finished_ms,
        "workers": "bench-host:4242:ab12",
        "nerrors": 1 if failed else 0,
    }
    if failed:
        record["error:1"] = json.dumps(
            {"exception_class_path": "builtins.ValueError", "traceback": "ValueError: bench"}
        )
    else:
        record["result"] = json.dumps(n)
    return record


def timed(get: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Return the median and 95th percentile of ``repeat`` calls, in ms (after one warm-up)."""
    get()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        get()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)]


def pages(samples: dict[str, list[str]]) -> dict[str, str]:
    from django_threadmill.admin.listing import Cursor

    tasks = "/admin/django_threadmill/task/"
    deep = Cursor(offsets={("default", "default", "done"): 400_000}).encode()
    task_id = samples["emails"][0]
    return {
        "queues page": "/admin/django_threadmill/queue/",
        "results, first page": tasks,
        "results, page at position 400,001": f"{tasks}?cursor={deep}",
        "results, queue=emails": f"{tasks}?queue=emails",
        "results, status=failed": f"{tasks}?status=failed",
        "results, task name matching nothing": f"{tasks}?task=no-such-task",
        "search by id without @queue": f"{tasks}?q={task_id.split('@')[0]}",
        "task detail": f"{tasks}default/{task_id}/",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()
    key_prefix = f"tmbench-{uuid.uuid4().hex[:8]}"
    with session_redis_url() as url, tempfile.TemporaryDirectory() as directory:
        os.environ.update(
            REDIS_URL=url,
            THREADMILL_KEY_PREFIX=key_prefix,
            THREADMILL_DB=str(Path(directory) / "bench.sqlite3"),
            DJANGO_SETTINGS_MODULE="testproject.settings",
        )
        django.setup()
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.test import Client

        call_command("migrate", verbosity=0)
        client = Client()
        client.force_login(User.objects.create_superuser("bench", password="bench"))
        print(f"Writing {options.results:,} results...", file=sys.stderr)
        samples = fill(url, key_prefix, options.results)
        memory = redis.Redis.from_url(url).info("memory")["used_memory_human"]
        print(
            f"\n{options.results:,} results stored (Redis used_memory {memory}); "
            f"{options.repeat} requests per page, after one warm-up:\n"
        )
        print(f"{'page':40} {'median ms':>10} {'p95 ms':>10}")
        for name, path in pages(samples).items():
            assert client.get(path).status_code == 200, path
            median, p95 = timed(lambda path=path: client.get(path), options.repeat)
            print(f"{name:40} {median:10.1f} {p95:10.1f}")
        if os.environ.get("REDIS_URL") == url and "tmbench-" in key_prefix:
            cleanup(url, key_prefix)


def cleanup(url: str, key_prefix: str) -> None:
    client = redis.Redis.from_url(url)
    for key in client.scan_iter(f"{key_prefix}:*", count=10_000):
        client.unlink(key)


if __name__ == "__main__":
    main()
