"""``async def`` tasks for the event loop tests, at module level so worker processes import them."""

import asyncio
import os
import time
from pathlib import Path

from asgiref.sync import sync_to_async
from django.db import connection

from django_threadmill.compat import TaskContext, task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task

from .tasks import square

_arrived = 0
_all_in: asyncio.Event | None = None


@task
async def meet(expected: int, within_s: float) -> int:
    """Wait until ``expected`` of these run at once in this process, or fail after ``within_s``.

    Only an event loop running them concurrently lets them all meet: a thread per task, or a
    loop running fewer at once, never gathers ``expected``.
    """
    global _arrived, _all_in
    if _all_in is None:
        _all_in = asyncio.Event()
    _arrived += 1
    if _arrived >= expected:
        _all_in.set()
    await asyncio.wait_for(_all_in.wait(), within_s)
    return os.getpid()


@task
async def nap(seconds: float, log: str) -> int:
    """Await ``seconds``, then append this process's id to ``log`` (executions, counted)."""
    await asyncio.sleep(seconds)
    with open(log, "a") as out:
        out.write(f"{os.getpid()}\n")
    return os.getpid()


@task
async def wait_for_file(path: str, started: str) -> str:
    """Say it started, then await until ``path`` exists (polled on the loop, not blocking it)."""
    Path(started).touch()
    while not Path(path).exists():
        await asyncio.sleep(0.01)
    return "done"


@task
async def forever(started: str) -> None:
    Path(started).touch()
    await asyncio.Event().wait()


@task
async def blocks_the_loop(seconds: float) -> float:
    time.sleep(seconds)  # the mistake under test: a sync sleep inside a coroutine
    return seconds


@task(takes_context=True)
async def who_am_i(context: TaskContext) -> list[object]:
    return [context.task_result.id, context.attempt]


@task
async def enqueue_square(n: int) -> str:
    return (await square.aenqueue(n)).id


@threadmill_task(retry=ExponentialBackoff(base_delay=0.01, max_attempts=3, jitter=0))
async def flaky(marker: str) -> str:
    """Fail on the first attempt (no marker yet), succeed on the second."""
    if not Path(marker).exists():
        Path(marker).touch()
        raise ConnectionError("first attempt fails")
    return "second attempt"


def _hold_until(release: str, started: str) -> None:
    Path(started).touch()
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


@task
async def connects_from_the_loop() -> None:
    """Open a database connection in asgiref's thread, as the async ORM does."""
    await sync_to_async(connection.ensure_connection)()


def _connect() -> None:
    connection.ensure_connection()  # looked up in asgiref's thread, as the async ORM does


@task
async def connects_in_the_orm_thread() -> None:
    """Open a database connection of asgiref's thread, as an async ORM call does."""
    await sync_to_async(_connect)()


@task
async def connects_off_the_orm_thread() -> None:
    """Open a database connection in a thread of the loop's default executor."""
    await sync_to_async(_connect, thread_sensitive=False)()


@task
async def holds_the_orm_thread(release: str, started: str) -> None:
    """A slow query: hold asgiref's one thread-sensitive thread until ``release`` exists."""
    await sync_to_async(_hold_until)(release, started)


_left_running: set[asyncio.Task[None]] = set()  # referenced, as a real task would keep them


async def _runs_until_cancelled(ended: str) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        Path(ended).touch()


@task
async def leaves_work_running(ended: str) -> None:
    """Start work on the loop and return without it; it says ``ended`` when it ends."""
    _left_running.add(asyncio.get_running_loop().create_task(_runs_until_cancelled(ended)))


async def _exits_when_cancelled(ended: str) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        Path(ended).touch()
        raise SystemExit("the work left running exits") from None


async def _ignores_every_cancel(cancelled: str) -> None:
    while True:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            Path(cancelled).touch()


@task
async def leaves_work_ignoring_its_cancel(cancelled: str) -> None:
    """Start work on the loop that goes on through every cancel, and return without it."""
    _left_running.add(asyncio.get_running_loop().create_task(_ignores_every_cancel(cancelled)))


@task
async def leaves_an_exit_running(ended: str) -> None:
    """Start work on the loop that raises SystemExit once cancelled, and return without it."""
    _left_running.add(asyncio.get_running_loop().create_task(_exits_when_cancelled(ended)))


async def _stops_the_loop_when_cancelled(ended: str) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        Path(ended).touch()
        asyncio.get_running_loop().stop()


@task
async def leaves_a_loop_stop_running(ended: str) -> None:
    """Start work on the loop that stops the loop once cancelled, and return without it."""
    _left_running.add(asyncio.get_running_loop().create_task(_stops_the_loop_when_cancelled(ended)))


@task
async def ignores_its_cancel(seconds: float) -> None:
    """Await ``seconds`` again whenever cancelled: a coroutine the grace period cannot end."""
    while True:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            continue


@task
async def exits() -> None:
    raise SystemExit("the task exits")
