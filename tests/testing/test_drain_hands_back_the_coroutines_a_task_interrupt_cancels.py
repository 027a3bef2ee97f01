"""A ``SystemExit`` an ``async def`` task raises in drain() hands its batch's other coroutines
back, unrecorded, as a worker's shutdown hands back the coroutines it cancels.

The interrupt reached the test and left both tasks RUNNING, as documented, but the event loop's
end cancelled the other task before the drain knew it was handing back: that cancel was taken
for the task's own, so the task was logged "Task failed ... CancelledError" and its
``task_finished`` receivers heard it had failed, though its outcome was never recorded.
"""

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus, task, task_finished
from django_threadmill.testing import Threadmill

other_waiting = asyncio.Event()  # set by the other task once it awaits: only then is exit raised


@task
async def exits_once_the_other_awaits() -> None:
    await other_waiting.wait()
    raise SystemExit(3)


@task
async def awaits_for_ever() -> None:
    other_waiting.set()
    await asyncio.Event().wait()  # never set: only the drain's interrupt ends it


@pytest.fixture
def finished() -> Iterator[list[TaskResult]]:
    """The results ``task_finished`` is sent for while the test runs."""
    heard: list[TaskResult] = []

    def hear(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        heard.append(task_result)

    other_waiting.clear()
    task_finished.connect(hear)
    yield heard
    task_finished.disconnect(hear)


def test_the_coroutine_an_exit_cancels_is_neither_failed_nor_finished(
    threadmill: Threadmill, finished: list[TaskResult], caplog: pytest.LogCaptureFixture
) -> None:
    exiting = exits_once_the_other_awaits.enqueue()
    cancelled = awaits_for_ever.enqueue()
    with caplog.at_level(logging.DEBUG, "django_threadmill"), pytest.raises(SystemExit):
        threadmill.drain()
    for result in (exiting, cancelled):
        result.refresh()
        assert result.status == TaskResultStatus.RUNNING  # unrecorded: its lease will lapse
    assert finished == []
    assert "Task failed" not in caplog.text
