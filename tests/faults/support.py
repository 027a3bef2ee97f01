"""Helpers for the fault tests: executions counted outside Redis, results read back."""

from collections import Counter
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus

from . import tasks


def enqueue_counted(backend: ThreadmillTaskBackend, log: Path, count: int) -> list[TaskResult]:
    """Enqueue ``count`` tasks that append their id to ``log`` each time they run."""
    return backend.enqueue_many(tasks.count_run, [((str(log),), {}) for _ in range(count)])


def executions(log: Path) -> Counter[str]:
    """Count executions per task id from the tasks' own log."""
    return Counter(log.read_text().split()) if log.exists() else Counter()


def statuses(results: list[TaskResult]) -> Counter[TaskResultStatus]:
    """Refresh every result and count their statuses."""
    for result in results:
        result.refresh()
    return Counter(result.status for result in results)


def all_successful(results: list[TaskResult]) -> bool:
    return statuses(results) == Counter({TaskResultStatus.SUCCESSFUL: len(results)})


def states(client: redis.Redis, broker: Broker, results: list[TaskResult]) -> Counter[str]:
    """Count the stored states of ``results`` with one pipelined read (no per-task trips)."""
    with client.pipeline(transaction=False) as pipe:
        for result in results:
            pipe.hget(broker.record_key(result.id) or "", "state")
        return Counter(pipe.execute())
