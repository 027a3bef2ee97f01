"""``a | b`` is ``chain(a, b)``, as Celery's ``sig1 | sig2`` is a chain: the same parts, plan
and stored form; anything but a step, chain or group on either side is refused, naming the fix.
"""

import re
from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.results import cut_to
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import Chain, Group, chain, group, step
from django_threadmill.workflows.plan import plan, workflow_fields

from .tasks import add, collect, number

a, b, c, d = (step(add, n) for n in (1, 2, 3, 4))


@pytest.mark.parametrize(
    ("piped", "chained"),
    [
        (lambda: step(number, 1) | a, lambda: chain(step(number, 1), a)),
        (lambda: step(number, 1) | a | b, lambda: chain(step(number, 1), a, b)),
        (lambda: chain(step(number, 1), a) | b, lambda: chain(chain(step(number, 1), a), b)),
        (lambda: step(number, 1) | chain(a, b), lambda: chain(step(number, 1), chain(a, b))),
        (
            lambda: chain(step(number, 1), a) | chain(b, c),
            lambda: chain(chain(step(number, 1), a), chain(b, c)),
        ),
        (
            lambda: step(number, 1) | group(a, chain(b, c)) | step(collect),
            lambda: chain(step(number, 1), group(a, chain(b, c)), step(collect)),
        ),
        (
            lambda: group(step(number, 1), step(number, 2)) | group(a, b),
            lambda: chain(group(step(number, 1), step(number, 2)), group(a, b)),
        ),
    ],
    ids=[
        "two steps",
        "three steps",
        "a chain on the left",
        "a chain on the right",
        "chains on both sides",
        "a group between steps",
        "two groups",
    ],
)
def test_a_pipe_plans_and_stores_what_chain_does(
    piped: Callable[[], Chain], chained: Callable[[], Chain]
) -> None:
    assert plan(piped()) == plan(chained())
    assert workflow_fields(plan(piped()).steps) == workflow_fields(plan(chained()).steps)


def test_a_chain_on_either_side_gives_its_parts_not_a_nested_chain() -> None:
    first = step(number, 1)
    assert chain(first, a) | b == chain(first, a, b)
    assert first | chain(a, b) == chain(first, a, b)
    assert chain(first, a) | chain(b, c) | d == chain(first, a, b, c, d)


def test_a_group_piped_into_a_step_is_a_group_with_that_callback() -> None:
    """Celery's ``group(...) | sig`` is a chord: here the step gets the list of the members'
    values, as the group's ``then=`` step does."""
    members = (step(number, 1), step(number, 2))
    piped = group(*members) | step(collect)
    assert plan(piped) == plan(Group(members, then=step(collect)))


def test_a_piped_workflow_runs_as_its_chain_does(backend: ThreadmillTaskBackend) -> None:
    piped = (step(number, 1) | group(a, chain(b, c)) | step(collect)).enqueue()
    chained = chain(step(number, 1), group(a, chain(b, c)), step(collect)).enqueue()

    assert drain() == 10

    piped.refresh()
    chained.refresh()
    assert piped.status == chained.status == TaskResultStatus.SUCCESSFUL
    values = [[r.return_value for r in flow.results if r is not None] for flow in (piped, chained)]
    assert values[0] == values[1] == [1, 2, 3, 6, [2, 6]]


PIPE = "a | b takes steps, chains and groups on both sides (it is chain(a, b)), not "
WRAP = " Wrap the task as step(task, ...)."


def a_function(value: int) -> int:
    return value


@pytest.mark.parametrize(
    ("build", "given", "fix"),
    [
        (lambda: a | number, repr(number), WRAP),
        (lambda: number | a, repr(number), WRAP),
        (
            lambda: a | a_function,
            repr(a_function),
            " Decorate the function with @task, then wrap the task as step(task, ...).",
        ),
        (
            lambda: a_function | a,
            repr(a_function),
            " Decorate the function with @task, then wrap the task as step(task, ...).",
        ),
        (lambda: a | None, "None", " Write step(task, ...) on each side of |."),
        (lambda: None | a, "None", " Write step(task, ...) on each side of |."),
        (lambda: a | [b], f"[{b!r}]", " Pass the steps one by one: chain(*steps)."),
        (lambda: [a] | b, f"[{a!r}]", " Pass the steps one by one: chain(*steps)."),
    ],
    ids=[
        "a bare task on the right",
        "a bare task on the left",
        "a function on the right",
        "a function on the left",
        "None on the right",
        "None on the left",
        "a list on the right",
        "a list on the left",
    ],
)
def test_a_pipe_refuses_what_chain_refuses_naming_the_fix(
    build: Callable[[], object], given: str, fix: str
) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(PIPE + cut_to(given, 200) + '.' + fix)}$"):
        build()


def test_a_pipe_refuses_an_enqueued_tasks_result(backend: ThreadmillTaskBackend) -> None:
    enqueued = number.enqueue(1)
    with pytest.raises(TypeError) as refused:
        enqueued | a
    message = str(refused.value)
    assert message.startswith(f"{PIPE}TaskResult(")
    assert message.endswith(
        " That is a task enqueued already: wrap the task itself as step(task, ...)."
    )
