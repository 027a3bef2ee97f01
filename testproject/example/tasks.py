"""Example tasks for the demo and the tests: fast, slow, failing, async, context, deferred."""

import asyncio
import os
import time
from typing import Any

from django.db import connection

from django_threadmill.compat import TaskContext, task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as retrying_task


@task
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value


@task
def touch_database() -> int:
    """Run ``SELECT 1``: a task that opens the worker thread's database connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return int(cursor.fetchone()[0])


@task
def add(a: int, b: int) -> int:
    return a + b


@task(queue_name="reports")
def slow(seconds: float) -> float:
    """Sleep on purpose: this task stands for real work that takes a while."""
    time.sleep(seconds)
    return seconds


@task
def fail(message: str) -> None:
    raise ValueError(message)


@task
async def async_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


@task(takes_context=True)
def attempt_info(context: TaskContext) -> dict[str, Any]:
    return {"attempt": context.attempt, "id": context.task_result.id}


@task(queue_name="emails", priority=10)
def send_welcome(address: str) -> str:
    return f"sent to {address}"


@task
def record_pid() -> int:
    return os.getpid()


@retrying_task(takes_context=True, retry=ExponentialBackoff(base_delay=0.2, max_attempts=3))
def flaky(context: TaskContext) -> int:
    """Fail the first two attempts, then succeed: shows retries with backoff."""
    if context.attempt < 3:
        raise ConnectionError(f"attempt {context.attempt}: upstream not ready")
    return context.attempt
