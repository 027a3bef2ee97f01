"""django-threadmill: testproject's settings, `manage.py threadmill_worker`."""

import os
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from pathlib import Path

from django_threadmill.broker.keys import KeySpace

from ..base import REPO_DIR, Peer, RunContext, WorkerSpec, staged_counter

KEY_PREFIX = "bench"
# The LOGGING many projects start with, the root logger on the console, at -v 1: the fresh
# project rows (docs/benchmarks.md, Method).
FRESH_PROJECT_SETTINGS = "testproject.settings_fresh"
COMMAND = REPO_DIR / "django_threadmill" / "management" / "commands" / "threadmill_worker.py"
# A checkout of an earlier commit to run beside this one (e.g. a `git worktree`): its worker
# drains tasks staged by this checkout, so a change is measured against its parent in one run.
BASELINE_DIR = os.environ.get("THREADMILL_BENCH_BASELINE", "")
# Worker options newer than some checkouts: a row that needs one its worker lacks is skipped.
ELASTIC_FLAG = "--max-threads"
ASYNC_LANE_FLAG = "--async-concurrency"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@cache
def worker_options(checkout: Path) -> frozenset[str] | str:
    """The options `manage.py threadmill_worker --help` lists in ``checkout``, asked once per
    session; or why it could not say."""
    run = subprocess.run(
        [sys.executable, str(checkout / "manage.py"), "threadmill_worker", "--help"],
        cwd=REPO_DIR,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO_DIR),
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    if run.returncode:
        return f"threadmill_worker --help exited {run.returncode}: {run.stderr.strip()[-300:]}"
    return frozenset(OPTION.findall(run.stdout))


def needed_options(spec: WorkerSpec) -> list[str]:
    """The worker options a row of ``spec`` passes that older workers may not have."""
    return [
        *([ELASTIC_FLAG] if spec.max_threads else []),
        *([ASYNC_LANE_FLAG] if spec.async_concurrency else []),
    ]


class ThreadmillPeer(Peer):
    name = "threadmill"
    label = "django-threadmill"
    distribution = "django-threadmill"
    module = "django_threadmill"
    poll_commands = ("zcard", "zcard")
    supports_pickup = True

    def missing(self) -> str | None:
        if not COMMAND.exists():
            return "manage.py threadmill_worker is not in this checkout yet"
        return super().missing()

    def env(self, context: RunContext) -> dict[str, str]:
        return {
            **super().env(context),
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            "REDIS_URL": context.redis_url,
            "THREADMILL_KEY_PREFIX": KEY_PREFIX,
            "THREADMILL_DB": str(context.workdir / "testproject.sqlite3"),
        }

    checkout = REPO_DIR  # where the worker's manage.py and packages come from

    def lacks(self, spec: WorkerSpec) -> str | None:
        """A flag this checkout's worker does not have, or a task its tree does not define.

        An async row without --async-concurrency runs async tasks on worker threads (each on
        its thread's own event loop): that is what a worker without the lane does, and once
        the lane is there such a row would measure the lane instead, so it is skipped.
        """
        where = "threadmill_worker" + ("" if self.checkout == REPO_DIR else f" at {self.checkout}")
        if spec.task_sleep_ms:
            name = "anap" if spec.async_task else "nap"
            tasks = self.checkout / "benchmarks" / "peers" / "django_tasks.py"
            if f"def {name}(" not in tasks.read_text():
                return f"{tasks} defines no {name} task (the worker imports its own)"
        on_threads = spec.async_task and not spec.async_concurrency
        needed = needed_options(spec)
        if not needed and not on_threads:
            return None
        options = worker_options(self.checkout)
        if isinstance(options, str):
            return options
        if missing := [flag for flag in needed if flag not in options]:
            return f"{where} has no {', '.join(missing)} yet"
        if on_threads and ASYNC_LANE_FLAG in options:
            return (
                f"{where} has {ASYNC_LANE_FLAG}: its async tasks run on the event-loop lane, "
                "not on threads (the +N async row measures the lane)"
            )
        return None

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        argv = self.python(
            str(self.checkout / "manage.py"),
            "threadmill_worker",
            "--processes",
            str(spec.processes),
            "--threads",
            str(spec.threads),
            "--prefetch",
            str(spec.prefetch),
        )
        return [
            *argv,
            *(["--burst"] if spec.burst else []),
            *(["--sync-ack"] if spec.sync_ack else []),
            *([ELASTIC_FLAG, str(spec.max_threads)] if spec.max_threads else []),
            *([ASYNC_LANE_FLAG, str(spec.async_concurrency)] if spec.async_concurrency else []),
            *(["--settings", spec.settings] if spec.settings else []),
        ]

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        """Count the staged tasks once, then the ones out of the ready index and the leases.

        A finish call records the outcome and drops the lease in one script, so a task counts
        the moment its result is stored; the done index gets it with the worker's next
        metrics send, about a second later (docs/observability.md, Metrics and the done index),
        and counted there it put a second on every run's start and end.
        """
        keys = KeySpace(KEY_PREFIX, "default").queue("default")
        return staged_counter(
            context.direct_redis_url, ("ZCARD", keys.ready), ("ZCARD", keys.leases)
        )


class BaselinePeer(ThreadmillPeer):
    """Our worker from the THREADMILL_BENCH_BASELINE checkout, on tasks this checkout staged."""

    name = "threadmill-base"
    checkout = Path(BASELINE_DIR)

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"threadmill at {self.checkout.name}"

    @property
    def package(self) -> str:
        return "threadmill"  # stage with this checkout's client: the record format is shared

    def missing(self) -> str | None:
        if not (self.checkout / "manage.py").exists():
            return f"THREADMILL_BENCH_BASELINE={BASELINE_DIR!r} holds no manage.py"
        return super().missing()
