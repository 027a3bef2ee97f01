"""Async tasks that misuse the event loop, for tests/worker/test_loop_misuse.py; at module level
so worker processes import them."""

import asyncio
import functools
import gc
import time
from collections.abc import Awaitable, Callable

from django_threadmill.compat import task


async def _blocks(seconds: float) -> None:
    time.sleep(seconds)  # the mistake under test, in a coroutine gather() runs as a task


@task
async def gathers_a_blocking_call(seconds: float) -> str:
    await asyncio.gather(asyncio.sleep(0), _blocks(seconds))
    return "returned"


async def _helper() -> int:
    return 1


@task
def returns_a_coroutine() -> object:
    return _helper()  # the mistake under test: an async helper called from a sync task


@task
async def returns_a_coroutine_unawaited() -> object:
    return _helper()  # the mistake under test: ``return await _helper()`` meant


def _sync_wrapper(function: Callable[[], Awaitable[object]]) -> Callable[[], object]:
    """A decorator that forgets to be async: its wrapper returns the coroutine unawaited."""

    @functools.wraps(function)
    def wrapper() -> object:
        return function()

    return wrapper


@task
@_sync_wrapper
async def wrapped_by_a_sync_decorator() -> object:
    return 1


@task
async def blocks_in_a_callback(seconds: float) -> str:
    """Schedule a sync callback that blocks the loop, and await past it."""
    asyncio.get_running_loop().call_soon(time.sleep, seconds)  # the mistake under test
    await asyncio.sleep(seconds * 2)
    return "returned"


def _fails() -> None:
    raise ValueError("a callback failed")


@task
async def schedules_a_failing_callback() -> str:
    """Schedule a sync callback that raises, and let it run."""
    asyncio.get_running_loop().call_soon(_fails)
    await asyncio.sleep(0)  # the loop runs its ready callbacks in order: the failing one first
    return "returned"


async def _waits_for_nothing() -> None:
    await asyncio.get_running_loop().create_future()  # referenced only by this task


@task
async def drops_work_it_started() -> str:
    """Start work and keep no reference to it (asyncio keeps none): the next collection
    destroys it mid-way."""
    asyncio.get_running_loop().create_task(_waits_for_nothing())  # the mistake under test
    await asyncio.sleep(0)
    gc.collect()  # as the collector would, in its own time
    return "returned"
