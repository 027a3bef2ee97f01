"""A task_enqueued receiver that enqueues a follow-up, and an async task that enqueues: at module
level, so a worker process can connect the one and run the other."""

from typing import Any

from django_threadmill.compat import TaskResult, task, task_enqueued
from testproject.example.tasks import echo

ORIGINAL = "original"  # echo's argument for a task that gets a follow-up


async def follow_up(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    """Enqueue ("follow-up", id) for each echo of ORIGINAL the moment it is announced."""
    if task_result.task.name == "echo" and task_result.args == [ORIGINAL]:
        await echo.aenqueue(["follow-up", task_result.id])


def connect() -> None:
    task_enqueued.connect(follow_up, weak=False)


@task
async def spawn() -> str:
    """Enqueue an echo of ORIGINAL from the worker's event loop; return its id."""
    return (await echo.aenqueue(ORIGINAL)).id
