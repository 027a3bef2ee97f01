"""django.tasks tasks for the Django-based queues: each settings module binds "default"."""

import asyncio
import time
from typing import Any

from django.tasks import task


@task
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value


@task
def nap(value: Any, seconds: float) -> Any:
    """Sleep ``seconds``, then return the argument: an I/O-bound task."""
    time.sleep(seconds)
    return value


@task
async def anap(value: Any, seconds: float) -> Any:
    """Await ``asyncio.sleep(seconds)``, then return the argument: an I/O-bound async task."""
    await asyncio.sleep(seconds)
    return value


@task
def stamp() -> float:
    """Return the wall clock when the task started, for pickup latency."""
    return time.time()
