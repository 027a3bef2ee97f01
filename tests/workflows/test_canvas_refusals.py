"""A workflow built wrongly is refused where it is written, naming what to write instead."""

import re
from collections.abc import Callable

import pytest

from django_threadmill.workflows import Chain, Group, Step, chain, group, step

from .tasks import number


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: group(), "group() needs at least one step: group(step(task), ...)."),
        (lambda: chain(number), "Wrap the task as step(task, ...)."),
        (
            lambda: group([step(number, n) for n in range(1000)]),
            "Pass the steps one by one: group(*steps).",
        ),
        (
            lambda: chain(step(number, n) for n in range(3)),
            "Pass the steps one by one: chain(*steps).",
        ),
        (lambda: group(step(number, 1), 2), "not 2."),
        # The exported classes built directly: a group of no members stored a workflow whose
        # callback waited for good, a chain of none raised IndexError, a step of no task
        # AttributeError.
        (lambda: Group((), then=step(number, 1)), "group() needs at least one step"),
        (lambda: Chain(()), "chain() needs at least one step"),
        (lambda: Chain(step(number, n) for n in range(3)), "Write chain(*steps) instead."),
        (lambda: Step(print), "step() takes a task (a function decorated with @task)"),
    ],
    ids=[
        "empty",
        "a bare task",
        "a list",
        "a generator",
        "a number",
        "an empty Group",
        "an empty Chain",
        "a Chain of a generator",
        "a Step of no task",
    ],
)
def test_a_workflow_built_wrongly_is_refused_naming_the_fix(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=re.escape(message)) as refused:
        build()
    assert len(str(refused.value)) < 400  # a thousand steps are not all written out
