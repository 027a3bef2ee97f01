"""An async task that catches the cancel at the grace period's end and returns is recorded as it
ended under ``--task-timeout`` too, as it is without one (docs/worker.md, Two lanes).

Without a timeout the lane awaits the task's coroutine itself: the cancel reaches it, the task
catches it (to save its state, say) and returns, and the attempt is recorded SUCCESSFUL. Under
``--task-timeout`` the coroutine runs as an asyncio task of its own; the lane cancelled it and
handed the attempt back at once, without waiting: the task's return value was dropped, the
result sat RUNNING for the reaper (FAILED ``LeaseExpired``, or run again by its retry policy),
and the worker exited 1 as if it had left a task running.

The real ``threadmill_worker`` command in a subprocess, a real SIGTERM; the task says it started
with a file, and the stop's cancel reaches it however long the grace period takes.
"""

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command, wait_until


@task
async def saves_its_state_when_cancelled(started: str) -> str:
    """Wait until cancelled; then clean up (one await) and return what it saved."""
    Path(started).touch()
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await asyncio.sleep(0)
        return "saved"
    return "never"


@pytest.mark.parametrize("timeout", [[], ["--task-timeout", "600"]], ids=["bare", "timed"])
def test_a_task_returning_from_the_stops_cancel_is_recorded_with_what_it_returned(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    timeout: list[str],
) -> None:
    started = tmp_path / "started"
    result = saves_its_state_when_cancelled.enqueue(str(started))
    command = start_worker("--grace-period", "0.2", *timeout)
    wait_until(started.exists, "the task starting")
    command.signal(signal.SIGTERM)

    assert command.wait(60) == 0, command.log
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, command.log
    assert result.return_value == "saved"
