"""django-threadmill: testproject's settings, `manage.py threadmill_worker`."""

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from django_threadmill.broker.keys import KeySpace

from ..base import REPO_DIR, Peer, RunContext, WorkerSpec, redis_counter

KEY_PREFIX = "bench"
# The LOGGING many projects start with, the root logger on the console, at -v 1: the fresh
# project rows (docs/benchmarks.md, Method).
FRESH_PROJECT_SETTINGS = "testproject.settings_fresh"
COMMAND = REPO_DIR / "django_threadmill" / "management" / "commands" / "threadmill_worker.py"
# A checkout of an earlier commit to run beside this one (e.g. a `git worktree`): its worker
# drains tasks staged by this checkout, so a change is measured against its parent in one run.
BASELINE_DIR = os.environ.get("THREADMILL_BENCH_BASELINE", "")


class ThreadmillPeer(Peer):
    name = "threadmill"
    label = "django-threadmill"
    distribution = "django-threadmill"
    module = "django_threadmill"
    poll_commands = ("zcard",)
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
            *(["--settings", spec.settings] if spec.settings else []),
        ]

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        done = KeySpace(KEY_PREFIX, "default").queue("default").done
        return redis_counter(context.direct_redis_url, "ZCARD", done)


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
