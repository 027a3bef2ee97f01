"""A task that refreshes its own result while a worker runs it reads it RUNNING, its attempt
counted, as Django documents the status of a task "currently being executed".

A worker holds each start notice for 20 ms (docs/design.md, Worker), so the record of a task
that has just started still says reserved, which reads READY. A task that took the context and
called ``context.task_result.refresh()`` in that window had its own result turned back to READY,
with no attempt, no ``started_at`` and no worker: ``context.attempt`` then read 0. The drain
writes each start before the task runs, so only a real worker shows it.
"""

from collections.abc import Callable
from typing import Any

import pytest

from django_threadmill.compat import Task, TaskContext, TaskResultStatus, task
from tests.support import Command, wait_until


def _as_seen(context: TaskContext) -> dict[str, Any]:
    """What the task's own result and context say once refreshed."""
    result = context.task_result
    return {
        "status": str(result.status),
        "attempts": result.attempts,
        "context_attempt": context.attempt,
        "started": result.started_at is not None,
        "attempted": result.last_attempted_at is not None,
        "finished": result.finished_at is not None,
    }


@task(takes_context=True)
def refreshes_itself(context: TaskContext) -> dict[str, Any]:
    context.task_result.refresh()
    return _as_seen(context)


@task(takes_context=True)
async def arefreshes_itself(context: TaskContext) -> dict[str, Any]:
    await context.task_result.arefresh()
    return _as_seen(context)


RUNNING_AS_SEEN = {
    "status": "RUNNING",
    "attempts": 1,
    "context_attempt": 1,
    "started": True,
    "attempted": True,
    "finished": False,
}


@pytest.mark.parametrize("task_of", [refreshes_itself, arefreshes_itself], ids=["sync", "async"])
def test_a_task_refreshing_its_result_as_it_starts_reads_it_running(
    start_worker: Callable[..., Command], task_of: Task
) -> None:
    results = [task_of.enqueue() for _ in range(4)]
    command = start_worker("--threads", "2")
    for result in results:
        wait_until(lambda result=result: (result.refresh(), result.is_finished)[1], "tasks end")
    command.close()
    for result in results:
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
        assert result.return_value == RUNNING_AS_SEEN
        assert result.attempts == 1
