"""The enqueue side shared by the django.tasks backends (see benchmarks/harness/client.py).

benchmarks/harness/client.py calls django.setup() before importing this module.
"""

import time
from typing import Any

from django.tasks import Task, TaskResult, TaskResultStatus

from ..harness.waiting import poll_until
from .django_tasks import anap, echo, nap, stamp

FINISHED = (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED)


def enqueue_one(value: str) -> None:
    echo.enqueue(value)


def enqueue_bulk(count: int, value: str) -> None:
    """One ``enqueue`` per task: django.tasks has no bulk API."""
    for _ in range(count):
        echo.enqueue(value)


def staged_task(
    value: str, sleep_ms: int = 0, is_async: bool = False
) -> tuple[Task, tuple[Any, ...]]:
    """The task a bulk enqueue stages and its arguments: echo, or a nap (anap if ``is_async``)
    of ``sleep_ms``."""
    if not sleep_ms:
        return echo, (value,)
    return (anap if is_async else nap), (value, sleep_ms / 1000)


def finished(result: TaskResult) -> bool:
    result.refresh()
    return result.status in FINISHED


def pickup() -> float:
    """Enqueue one stamp task, wait for its result; return seconds from enqueue to start."""
    enqueued_at = time.time()
    result = stamp.enqueue()
    poll_until(lambda: finished(result), "the stamp task finished")
    return float(result.return_value) - enqueued_at
