"""Async tasks that misuse the event loop, for tests/worker/test_loop_misuse.py; at module level
so worker processes import them."""

import asyncio
import time

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
