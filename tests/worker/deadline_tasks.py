"""``async def`` tasks that end just as the grace period does, for
test_async_tasks_at_the_deadline.py (at module level: the in-process worker imports them)."""

import asyncio
import threading
from typing import Any

from django_threadmill.compat import task

at_the_end = threading.Event()  # the coroutine is about to return, holding the loop
cancel_queued = threading.Event()  # the test queued the lane's cancel: it may return now
in_receiver = threading.Event()  # a task_finished receiver is awaiting, its task returned


@task
async def ends_at_the_deadline() -> str:
    """Return once the lane's cancel is queued: it holds the loop until then (a blocking wait,
    on purpose), so the cancel runs on the loop's next turn, after the coroutine returned."""
    at_the_end.set()
    cancel_queued.wait(30)
    return "done"


@task
async def ends_now() -> str:
    return "done"


async def awaits_for_ever(**kwargs: Any) -> None:
    """A task_finished receiver still awaiting when the grace period ends."""
    in_receiver.set()
    await asyncio.get_running_loop().create_future()
