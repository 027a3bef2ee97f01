"""Tasks for the limit tests: they record when they ran in files, outside Redis."""

import asyncio
import time
from pathlib import Path

from django_threadmill.compat import task


@task(queue_name="reports")
def timed(log_path: str, seconds: float) -> None:
    """Work for ``seconds``; append "start end" (wall clock) to ``log_path`` in one write."""
    started = time.time()
    time.sleep(seconds)  # the task's own work, not test synchronisation
    with open(log_path, "a") as log:
        log.write(f"{started} {time.time()}\n")


@task(queue_name="emails")
def stamp(log_path: str) -> None:
    """Append the wall-clock start time to ``log_path``."""
    with open(log_path, "a") as log:
        log.write(f"{time.time()}\n")


@task(queue_name="reports")
def hold_until(marker: str, release: str) -> None:
    """Write ``marker``, then hold a slot until the file ``release`` exists (at most a minute)."""
    Path(marker).touch()
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the task's own work: waiting for the test to let it go


@task(queue_name="emails")
async def astamp(log_path: str) -> None:
    """``stamp``, awaited on the event loop lane."""
    stamp.func(log_path)


@task(queue_name="reports")
async def ahold_until(marker: str, release: str) -> None:
    """``hold_until`` on the event loop lane, awaiting between looks."""
    Path(marker).touch()
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)  # the task's own work: waiting for the test to let it go
