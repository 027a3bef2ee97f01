"""``chain()``, ``group()`` and ``|`` given what a workflow's ``enqueue()`` returned say what to
pass instead.

Each said "takes steps, chains and groups, not WorkflowResult(...)" and no more (``|`` added
"Write step(task, ...) on each side of |"), where ``step()`` given the same already said what
it is: the result of a workflow enqueued already, in place of the workflow or its steps.
"""

from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import WorkflowResult, chain, group, step

from .tasks import add, number

HINT = (
    "That is what a workflow's enqueue() returned: pass the chain or group itself, not its "
    "result, or build it from steps, step(task, ...)."
)


@pytest.mark.parametrize(
    ("build", "refusal"),
    [
        (lambda enqueued: chain(enqueued), "chain() takes steps, chains and groups, not "),
        (
            lambda enqueued: chain(step(number, 1), enqueued),
            "chain() takes steps, chains and groups, not ",
        ),
        (lambda enqueued: group(enqueued), "group() takes steps, chains and groups, not "),
        (
            lambda enqueued: step(number, 1) | enqueued,
            "a | b takes steps, chains and groups on both sides (it is chain(a, b)), not ",
        ),
        (
            lambda enqueued: enqueued | step(number, 1),
            "a | b takes steps, chains and groups on both sides (it is chain(a, b)), not ",
        ),
    ],
    ids=["chain", "chain after a step", "group", "step | result", "result | step"],
)
def test_a_workflow_result_in_place_of_a_step_names_it_and_the_fix(
    backend: ThreadmillTaskBackend,
    build: Callable[[WorkflowResult], object],
    refusal: str,
) -> None:
    enqueued = chain(step(number, 1), step(add, 2)).enqueue()

    with pytest.raises(TypeError) as refused:
        build(enqueued)

    message = str(refused.value)
    assert message.startswith(f"{refusal}WorkflowResult(id={enqueued.id!r}, backend='default'")
    assert message.endswith(f"). {HINT}")  # its repr, cut short in the middle
