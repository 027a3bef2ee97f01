"""``step()`` given a step, a chain, a group or what ``enqueue()`` returned says what to pass.

Each was told "Decorate it with @task, or pass the task it returns", which misleads: a step is
written once (``step(step(task))`` wraps it twice), and a result is a task or workflow enqueued
already, which a decorator cannot turn back into a task.
"""

from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, group, step

from .tasks import add, number

AS_IT_IS = "already: use it as it is in chain() or group()"


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        (
            lambda: step(number, 1),
            f"That is a step {AS_IT_IS}, or pass its task: step(the_step.task, ...).",
        ),
        (lambda: chain(step(number, 1), step(add, 2)), f"That is a chain {AS_IT_IS}."),
        (lambda: group(step(number, 1)), f"That is a group {AS_IT_IS}."),
        (
            lambda: chain(step(number, 1)).enqueue(),
            "That is what a workflow's enqueue() returned: pass a task instead, or the workflow "
            "itself to chain() or group().",
        ),
        (
            lambda: number.enqueue(1),
            "That is what a task's enqueue() returned: pass the task itself.",
        ),
    ],
    ids=["a step", "a chain", "a group", "a WorkflowResult", "a TaskResult"],
)
def test_step_of_a_step_or_a_result_names_what_to_pass_instead(
    backend: ThreadmillTaskBackend, given: Callable[[], object], hint: str
) -> None:
    with pytest.raises(TypeError) as refused:
        step(given())  # type: ignore[arg-type]

    message = str(refused.value)
    assert message.startswith("step() takes a task (a function decorated with @task), not ")
    assert message.endswith(f". {hint}")
    assert "Decorate" not in message


def test_step_of_a_plain_function_still_says_to_decorate_it() -> None:
    with pytest.raises(TypeError) as refused:
        step(print)  # type: ignore[arg-type]

    assert str(refused.value) == (
        "step() takes a task (a function decorated with @task), not <built-in function print>. "
        "Decorate it with @task, or pass the task it returns."
    )
