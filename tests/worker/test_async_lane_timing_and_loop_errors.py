"""The event loop lane when one async task misbehaves: the others' outcomes stay their own, and
what asyncio has to say about a task's leftovers reaches the worker's log naming the task.

Every test runs the real ``threadmill_worker`` command in a subprocess; the tasks are at module
level so worker processes import them.
"""

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command

_returned = False  # set by ``returns_at_once`` in the worker process


@task
async def returns_at_once() -> str:
    global _returned
    await asyncio.sleep(0)
    _returned = True
    return "in time"


@task
async def blocks_once_the_other_returned(seconds: float) -> None:
    """Block the loop just after ``returns_at_once`` returned, before its wait wakes."""
    gives_up = time.monotonic() + 30
    while not _returned and time.monotonic() < gives_up:
        await asyncio.sleep(0)
    time.sleep(seconds)  # the mistake under test: a sync sleep inside a coroutine


async def _fails_at_once() -> None:
    raise ValueError("left behind and failed")


@task
async def leaves_failing_work() -> str:
    """Start work that fails on the next turn of the loop, let it fail, and never read it."""
    asyncio.get_running_loop().create_task(_fails_at_once())
    await asyncio.sleep(0)
    return "returned"


def test_an_async_task_that_returned_in_time_is_not_timed_out_by_another_tasks_block(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command]
) -> None:
    """The timeout looked at the loop's clock once the wait woke: a task that returned at once,
    then had the loop held by another's blocking call, was recorded FAILED with TaskTimeout
    ("the worker cancelled it"), its result dropped and no retry."""
    in_time = returns_at_once.enqueue()
    blocker = blocks_once_the_other_returned.enqueue(2)

    worker = start_worker("--burst", "--task-timeout", "1")
    assert worker.wait(60) == 0, worker.log

    in_time.refresh()
    assert in_time.status == TaskResultStatus.SUCCESSFUL, in_time.errors
    assert in_time.return_value == "in time"
    blocker.refresh()  # its own blocking call ran past the timeout: timed out, as before
    assert blocker.status == TaskResultStatus.FAILED
    assert blocker.errors[0].exception_class_path == "django_threadmill.exceptions.TaskTimeout"


def test_work_a_task_left_running_that_failed_is_logged_naming_the_task(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command]
) -> None:
    """asyncio printed "Task exception was never retrieved" and its traceback bare to stderr:
    outside the log format (lines that broke a JSON log), naming no task."""
    leaving = leaves_failing_work.enqueue()

    worker = start_worker("--burst", "--log-format", "json")
    assert worker.wait(60) == 0, worker.log

    leaving.refresh()
    assert leaving.return_value == "returned"
    lines = worker.log.splitlines()
    entries: list[dict[str, Any]] = [json.loads(line) for line in lines if line.startswith("{")]
    [reported] = [entry for entry in entries if "never retrieved" in entry["message"]]
    assert reported["level"] == "ERROR"
    assert reported["message"] == (
        f"Event loop error task_id={leaving.id} path={leaves_failing_work.module_path}: "
        "Task exception was never retrieved"
    )
    assert "ValueError: left behind and failed" in reported["exception"]
    assert all(line.startswith("{") for line in lines if "left behind and failed" in line)
