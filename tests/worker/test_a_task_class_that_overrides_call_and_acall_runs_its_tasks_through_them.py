"""A task whose class overrides ``Task.call`` and ``Task.acall`` runs through them in a worker:
sync tasks through ``call``, as Django's ImmediateBackend runs every task, and ``async def``
tasks through ``acall``, on the event loop.

The worker called the task's function itself, so a project's task class that wraps each run
(a tenant, a language, a span around it), given as its backend's ``task_class``, ran under
Django's own backends but was skipped in the worker.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django_threadmill.compat import TaskContext, TaskResultStatus
from django_threadmill.task import ThreadmillTask
from tests.support import Command


@dataclass(frozen=True, slots=True, kw_only=True)
class WrappingTask(ThreadmillTask):
    """A task class that says, in what its tasks return, which of its calls ran them."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return {"through": "call", "returned": ThreadmillTask.call(self, *args, **kwargs)}

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return {"through": "acall", "returned": await ThreadmillTask.acall(self, *args, **kwargs)}


def wrapping(**options: Any) -> Callable[[Callable[..., Any]], WrappingTask]:
    """Make a function a ``WrappingTask``, as ``@task`` does with its backend's task_class."""
    return lambda func: WrappingTask(func=func, **options)


@wrapping()
def double(n: int) -> int:
    return 2 * n


@wrapping()
async def adouble(n: int) -> int:
    return 2 * n


@wrapping(takes_context=True)
def attempt_and(context: TaskContext, n: int) -> list[int]:
    return [context.attempt, n]


def test_a_task_class_that_overrides_call_and_acall_runs_its_tasks_through_them(
    start_worker: Callable[..., Command],
) -> None:
    expected = [
        (double.enqueue(4), {"through": "call", "returned": 8}),
        (adouble.enqueue(5), {"through": "acall", "returned": 10}),
        (attempt_and.enqueue(7), {"through": "call", "returned": [1, 7]}),
    ]

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    for result, returned in expected:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
        assert result.return_value == returned
