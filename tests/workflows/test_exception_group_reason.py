"""Why a workflow ended, when its step raised an exception group: an ``async def`` task that
runs its work in an ``asyncio.TaskGroup`` fails with one when any part fails.

Python prints a group inside a margin ("  | "), its members deeper in, so no line of the
traceback started with the group's name: the workflow's ``why``, and every step it left unrun,
read ``step 1 failed: ExceptionGroup:     +------------------------------------``, the border
under the members (docs/workflows.md, Semantics)."""

import asyncio

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultStatus, task
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step

from .tasks import add, number


async def _fails(message: str) -> None:
    raise ValueError(message)


@task
async def gathers(value: int) -> None:
    """Pay and ship side by side in an asyncio.TaskGroup; both fail."""
    async with asyncio.TaskGroup() as parts:
        parts.create_task(_fails("no card"))
        parts.create_task(_fails("no stock"))


@task
def raises_nested_groups(value: int) -> None:
    """Raise a group whose member is a group of the same class."""
    raise ExceptionGroup("order failed", [ExceptionGroup("payment failed", [KeyError("card")])])


@pytest.mark.parametrize(
    ("failing", "why"),
    [
        (gathers, "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)"),
        (raises_nested_groups, "ExceptionGroup: order failed (1 sub-exception)"),
    ],
)
def test_a_step_that_raised_an_exception_group_is_named_by_the_groups_line(
    backend: ThreadmillTaskBackend, failing: Task, why: str
) -> None:
    flow = chain(step(number, 1), step(failing), group(step(add, 1), step(add, 2))).enqueue()

    assert drain() == 2

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why == f"step 1 failed: {why}"
    assert [s.not_run for s in flow.steps[2:]] == [flow.why, flow.why]
