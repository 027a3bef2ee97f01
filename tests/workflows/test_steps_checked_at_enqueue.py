"""Workflows as a team leaving Celery writes them: the docs' examples run as written, and a
step its task cannot be called as is refused before anything is stored."""

import re
from collections.abc import Callable

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import Chain, Group, chain, get_workflow, group, step

from .tasks import (
    add,
    attempt_and_value,
    collect,
    fetch,
    not_json,
    notify,
    number,
    publish,
    resize,
)


def test_the_docs_first_example_runs_as_written(backend: ThreadmillTaskBackend) -> None:
    flow = chain(
        step(fetch, "https://example.com/cat.jpg"),
        group(step(resize, 100), step(resize, 800)),
        step(publish),
    )
    result = flow.enqueue()

    assert drain() == 4

    read = get_workflow(result.id)
    assert read.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in read.results if r is not None] == [
        "cat.jpg",
        "cat.jpg@100",
        "cat.jpg@800",
        "cat.jpg@100 cat.jpg@800",
    ]


def test_the_docs_composed_and_celery_map_examples_run(backend: ThreadmillTaskBackend) -> None:
    a, b, c, d, e = number, add.using(queue_name="emails"), add, add, collect
    composed = chain(step(a, 1), group(step(b, 1), chain(step(c, 2), step(d, 3))), step(e))
    items = [(1, 2), (3, 4)]
    mapped = group(*(step(add, *item) for item in items))
    flows = [composed.enqueue(), mapped.enqueue()]

    drain()

    for flow in flows:
        flow.refresh()
    assert [flow.results[-1].return_value for flow in flows if flow.results[-1]] == [[2, 6], 7]


REFUSALS: list[tuple[Callable[[], Chain | Group], str]] = [
    (
        lambda: chain(step(fetch, "cat.jpg"), step(notify)),
        "Task 'tests.workflows.tasks.notify' cannot be step 1 of this workflow: it gets the "
        "value of the part before it as its first argument, then the arguments given to "
        "step() (too many positional arguments). Make its function take that value first "
        "(and ignore it if it needs none), or enqueue it outside the workflow.",
    ),
    (
        lambda: group(step(number, 1), step(number, 2), then=step(notify)),
        "Task 'tests.workflows.tasks.notify' cannot be step 2 of this workflow: it gets the "
        "value of the part before it",
    ),
    (
        lambda: chain(step(number, 1), step(add, value=2)),
        "(multiple values for argument 'value')",
    ),
    (
        lambda: chain(step(number, 1), step(attempt_and_value, 2)),  # after the context
        "Task 'tests.workflows.tasks.attempt_and_value' cannot be step 1 of this workflow: it "
        "gets the value of the part before it as its first argument, then the arguments given "
        "to step() (too many positional arguments).",
    ),
    (
        lambda: chain(step(add, 1), step(add, 2)),
        "Task 'tests.workflows.tasks.add' cannot be step 0 of this workflow: it gets the "
        "arguments given to step() (missing a required argument: 'n'). Pass step() the "
        "arguments its function takes.",
    ),
]


@pytest.mark.parametrize(
    ("build", "message"),
    REFUSALS,
    ids=[
        "a chain step that takes no value",
        "a callback",
        "a keyword clash",
        "one that takes the context",
        "a missing one",
    ],
)
def test_a_step_its_task_cannot_take_is_refused_before_anything_is_stored(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    build: Callable[[], Chain | Group],
    message: str,
) -> None:
    """It failed at run time, after the steps before it ran, with Python's "takes 0
    positional arguments but 1 was given" for a step given none."""
    with pytest.raises(TypeError, match=re.escape(message)):
        build().enqueue()

    assert redis_client.keys(f"{key_prefix}*") == []


def test_a_step_that_takes_the_context_takes_the_value_after_it(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(attempt_and_value)).enqueue()

    assert drain() == 2

    flow.refresh()
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [1, 1]


def test_a_value_that_is_not_json_fails_its_step_and_ends_the_workflow(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(not_json), step(add, 1)).enqueue()

    assert drain() == 2

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "FAILED", "NOT_RUN"]
    assert flow.why.startswith(
        "step 1 failed: TypeError: Task 'tests.workflows.tasks.not_json' returned a set, "
        "which is not JSON"
    )


def test_a_callback_that_is_no_step_is_refused_in_a_short_message() -> None:
    with pytest.raises(TypeError, match=r"^group\(then=\.\.\.\) takes one step, not \[") as refused:
        group(step(number, 1), then=[step(collect) for _ in range(1000)])  # type: ignore[arg-type]
    assert len(str(refused.value)) < 400
