"""The demo: enqueue the example tasks, run the worker on them, print each outcome.

Run it with ``scripts/demo``. It needs Django and redis-py only (not the test extra), and a
Redis: the one REDIS_URL names, else a throwaway ``redis-server`` from PATH, else one answering
on 127.0.0.1:6379.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import django
import redis

ROOT = Path(__file__).resolve().parents[1]


LOCAL_REDIS = "redis://127.0.0.1:6379/0"
NO_REDIS = (
    "The demo needs a Redis: set REDIS_URL (e.g. redis://127.0.0.1:6379/0), or put redis-server "
    "on PATH (apt install redis-server, brew install redis) for a throwaway one."
)


def answers(url: str, timeout_s: float = 10.0) -> bool:
    """Tell whether a Redis at ``url`` answers PING within ``timeout_s`` (polled)."""
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                return bool(client.ping())
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)  # polling a starting server with a deadline
    finally:
        client.close()


@contextmanager
def throwaway_redis(binary: str) -> Iterator[str]:
    """Run ``binary`` on a unix socket in a temp dir (no port to collide); stop it after."""
    with tempfile.TemporaryDirectory(prefix="threadmill-demo-") as directory:
        socket_path = Path(directory) / "redis.sock"
        server = subprocess.Popen(
            [
                *(binary, "--port", "0", "--unixsocket", str(socket_path), "--dir", directory),
                *("--save", "", "--appendonly", "yes"),
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            url = f"unix://{socket_path}?db=0"
            if not answers(url):
                raise SystemExit(f"{binary} did not start on {socket_path}. {NO_REDIS}")
            yield url
        finally:
            server.terminate()
            server.wait()


@contextmanager
def demo_redis() -> Iterator[str]:
    """Yield REDIS_URL, else a throwaway redis-server's URL, else the local Redis on 6379."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
    elif binary := shutil.which("redis-server"):
        with throwaway_redis(binary) as url:
            yield url
    elif answers(LOCAL_REDIS, timeout_s=0):
        yield LOCAL_REDIS
    else:
        raise SystemExit(NO_REDIS)


def enqueue_examples() -> list:  # type: ignore[type-arg]
    from django.utils import timezone

    from testproject.example import tasks

    results = [
        tasks.add.enqueue(2, 3),
        tasks.async_add.enqueue(20, 22),
        tasks.attempt_info.enqueue(),
        tasks.send_welcome.enqueue("ada@example.com"),
        tasks.slow.enqueue(0.5),
        tasks.fail.enqueue("this task fails on purpose"),
        tasks.flaky.enqueue(),
        tasks.add.using(run_after=timezone.now() + timedelta(seconds=2)).enqueue(40, 2),
    ]
    backend = tasks.echo.get_backend()
    results += backend.enqueue_many(tasks.echo, [((n,), {}) for n in range(1000)])
    return results


def outcome(result) -> str:  # type: ignore[no-untyped-def]
    if result.status == "SUCCESSFUL":
        return f"returned {result.return_value!r}"
    if result.status == "FAILED":
        return f"raised {result.errors[-1].exception_class_path}"
    return "still waiting"


def main() -> int:
    with demo_redis() as url:
        os.environ.update(
            REDIS_URL=url,
            THREADMILL_KEY_PREFIX=f"demo-{uuid.uuid4().hex[:8]}",
            DJANGO_SETTINGS_MODULE="testproject.settings",
        )
        django.setup()
        results = enqueue_examples()
        print(f"Enqueued {len(results)} tasks into {url}; first one is {results[0].status}.")
        command = ["threadmill_worker", "--processes", "1", "--threads", "4", "--burst"]
        print(f"Running: manage.py {' '.join(command)}")
        worker = subprocess.run(
            [sys.executable, "manage.py", *command, "--verbosity", "0"], cwd=ROOT, check=False
        )
        for result in results:
            result.refresh()
        print(f"\n{'task':<14} {'status':<11} {'attempts':>8}  outcome")
        for result in results[:8]:
            print(
                f"{result.task.name:<14} {result.status:<11} {result.attempts:>8}  "
                f"{outcome(result)}"
            )
        echoes = results[8:]
        succeeded = sum(1 for result in echoes if result.status == "SUCCESSFUL")
        print(f"{'echo x1000':<14} {succeeded} of {len(echoes)} SUCCESSFUL")
        return worker.returncode


if __name__ == "__main__":
    sys.exit(main())
