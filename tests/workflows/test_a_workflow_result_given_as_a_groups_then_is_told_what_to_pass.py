"""``group(..., then=...)`` given what a workflow's ``enqueue()`` returned says what it is and
what to pass instead.

It said "wrap it as then=step(task, ...)", as for a task, where a result is no task to wrap:
``step()`` refuses it in turn. It now says what ``step()``, ``chain()`` and ``group()`` say of
it, and how to run a workflow after the group. A task's result is told the same: it is a task
enqueued already, and step() takes the task itself. Anything else still gets the words it had.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, group, step

from .tasks import add, number


def test_a_workflow_result_as_then_names_it_and_the_fix(backend: ThreadmillTaskBackend) -> None:
    enqueued = chain(step(number, 1), step(add, 2)).enqueue()

    with pytest.raises(TypeError) as refused:
        group(step(number, 1), then=enqueued)  # type: ignore[arg-type]

    message = str(refused.value)
    assert message.startswith(
        f"group(then=...) takes one step, not WorkflowResult(id={enqueued.id!r}, "
    )
    assert message.endswith(
        "). That is what a workflow's enqueue() returned: pass one step, then=step(task, ...), "
        "or chain(group(...), workflow) to run the workflow itself after the group."
    )
    assert "wrap it" not in message


def test_a_task_result_as_then_names_it_and_the_fix() -> None:
    enqueued = number.enqueue(1)

    with pytest.raises(TypeError) as refused:
        group(step(number, 1), then=enqueued)  # type: ignore[arg-type]

    message = str(refused.value)
    assert message.startswith("group(then=...) takes one step, not TaskResult(")
    assert message.endswith(
        ". That is a task enqueued already: pass the task itself as then=step(task, ...), "
        "not its enqueue()."
    )
    assert "wrap it" not in message


def test_a_task_as_then_is_still_told_to_wrap_it() -> None:
    with pytest.raises(TypeError) as refused:
        group(step(number, 1), then=number)  # type: ignore[arg-type]

    assert str(refused.value).endswith(
        ": wrap it as then=step(task, ...), or chain(group(...), ...) to run more after the group."
    )
