"""WorkerOptions for tests that build a worker's parts without the command."""

from typing import Any

from django_threadmill.worker.options import WorkerOptions


def worker_options(**changes: Any) -> WorkerOptions:
    """One process of one thread on "default", nothing optional on, with ``changes``."""
    options: dict[str, Any] = {
        "backend_alias": "default",
        "queues": ("default",),
        "processes": 1,
        "threads": 1,
        "prefetch": None,
        "max_tasks": None,
        "max_tasks_jitter": 0,
        "burst": False,
        "sync_ack": False,
        "grace_period_s": 1.0,
        "task_timeout_s": None,
        "reap_interval_s": None,
    }
    return WorkerOptions(**{**options, **changes})
