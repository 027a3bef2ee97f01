"""Tasks that misbehave in ways a worker must survive: each ends its own attempt, recorded,
and every other task runs once. At module level so worker processes import them."""

import asyncio
import os
from pathlib import Path

from django.db import connection, transaction

from django_threadmill.compat import TaskContext, task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task

_left_running: set[asyncio.Task[None]] = set()  # what a task left behind, kept from the GC


class SelfQuoting(Exception):
    """An exception whose ``__str__`` recurses until Python stops it."""

    def __str__(self) -> str:
        return "again: " + str(self)


class BadNotes(Exception):
    """An exception whose notes cannot be read: ``traceback`` formatting raises on it."""

    @property
    def __notes__(self) -> list[str]:  # type: ignore[override]
        raise LookupError("notes")


@task
def raises_self_quoting() -> None:
    raise SelfQuoting


@task
def raises_bad_notes() -> None:
    raise BadNotes("plain message")


@task
def leaves_a_transaction_open() -> int:
    transaction.atomic().__enter__()  # never left
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return 1


@task
def returns_itself() -> list[object]:
    looped: list[object] = []
    looped.append(looped)
    return looped


@task
def returns(size: int) -> str:
    return "x" * size


@task
def forks_and_returns() -> int:
    """Fork, and let the child return into the worker, as a careless task's child would."""
    child = os.fork()
    if child == 0:
        return 0
    os.waitpid(child, 0)
    return child


@threadmill_task(
    retry=ExponentialBackoff(base_delay=0.01, max_attempts=3, jitter=0), takes_context=True
)
def forgets_its_attempts(context: TaskContext) -> None:
    context.task_result.worker_ids.clear()  # the retry policy must not count on this
    raise ConnectionError("fails every time")


@task
async def raises_cancelled() -> None:
    raise asyncio.CancelledError


@task
async def awaits_a_cancelled_future() -> None:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.cancel()
    await future


@task
async def stops_the_loop() -> str:
    asyncio.get_running_loop().stop()
    await asyncio.sleep(0)
    return "still running"


@task
async def leaves_an_exit_behind(marker: str) -> str:
    """Leave work on the loop that raises SystemExit once this task has ended."""

    async def later() -> None:
        await asyncio.sleep(0)
        Path(marker).touch()
        raise SystemExit(3)

    _left_running.add(asyncio.get_running_loop().create_task(later()))
    return "returned"


@task
async def waits_for(marker: str) -> str:
    while not Path(marker).exists():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0)  # one more turn of the loop: after the SystemExit came out
    return "went on"


@threadmill_task(retry=ExponentialBackoff(base_delay=0.01, max_attempts=2, jitter=0))
async def times_out_itself() -> None:
    await asyncio.wait_for(asyncio.Event().wait(), 0.01)


@task
async def ignores_cancel(started: str) -> None:
    Path(started).touch()
    while True:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            continue
