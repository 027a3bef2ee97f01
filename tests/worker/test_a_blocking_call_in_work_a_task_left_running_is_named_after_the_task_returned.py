"""A blocking call in work an async task started and left running is named, with its task and how
long it held the loop, after the task returned too (docs/worker.md, What blocks the loop).

A task that fires off a notice (``asyncio.create_task(notify(...))``) and returns leaves that work
on the loop; a sync call in it (``requests.post``) holds every async task of the process, as one
in the task itself would. The loop noted its beat, and the monitor watched, only while tasks ran:
with another async task running the call was named, but once no task ran it went unnamed,
however long it held the loop and the tasks waiting to start on it.

The real ``threadmill_worker`` command in a subprocess. The left work blocks the loop once the
test says so, after its task's outcome was recorded: no async task runs by then.
"""

import asyncio
import re
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task
from tests.support import Command, wait_until

from .support import MONITOR_WOKE_LATE

BLOCK_S = 0.5  # the blocking call under test
TRIES = 5  # a loaded machine can starve the monitor of CPU: it then names no task, by design

_left_running: set[asyncio.Task[None]] = set()  # referenced, as a real task would keep them


async def _blocks_once_told(go: str, blocked: str) -> None:
    while not Path(go).exists():
        await asyncio.sleep(0.01)
    time.sleep(BLOCK_S)  # the mistake under test: a sync call on the loop
    Path(blocked).touch()


@task
async def fires_off_a_blocking_notice(go: str, blocked: str) -> str:
    """Leave work on the loop that blocks it once ``go`` exists, and return."""
    _left_running.add(asyncio.get_running_loop().create_task(_blocks_once_told(go, blocked)))
    return "returned"


def finished(result: TaskResult) -> bool:
    """Tell whether ``result`` has finished, read afresh."""
    result.refresh()
    return result.is_finished


def test_work_a_task_left_running_that_blocks_the_loop_is_named_once_no_task_runs(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    command = start_worker("-v", "2")
    path = f"{__name__}.fires_off_a_blocking_notice"
    for attempt in range(TRIES):
        go, blocked = tmp_path / f"go-{attempt}", tmp_path / f"blocked-{attempt}"
        result = fires_off_a_blocking_notice.enqueue(str(go), str(blocked))
        wait_until(partial(finished, result), "the task returning")
        assert result.status == TaskResultStatus.SUCCESSFUL
        go.touch()
        named = f"Event loop blocked task_id={result.id} path={path} for_ms="
        said = command.wait_for_log(f"{re.escape(named)}|{re.escape(MONITOR_WOKE_LATE)}", 30)
        if said.group().startswith("Event loop blocked"):
            break
        wait_until(blocked.exists, "the block ending")
    else:
        pytest.fail("the loop monitor woke late in every run: the machine was short of CPU")
    command.signal(signal.SIGTERM)
    assert command.wait(60) == 0, command.log
