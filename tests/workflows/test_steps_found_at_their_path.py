"""A workflow step whose task no worker could import is refused at enqueue, as a task enqueued
alone is (docs/enqueue.md), with nothing of the workflow stored."""

import asyncio
import re
from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask, Task, task
from django_threadmill.testing import drain
from django_threadmill.workflows import Chain, Group, chain, group, step

from .tasks import collect, number


def kept_under_another_name(value: int) -> int:
    return value


# Module level, so Django accepts it, but its path names the plain function: no worker finds it.
renamed = task(kept_under_another_name)


class Holder:
    @staticmethod
    def run(value: int) -> int:
        return value


# Module level too (Django checks for "<locals>" only), but its path does not import.
in_a_class = task(Holder.run)


@pytest.mark.parametrize(
    ("hidden", "why"),
    [(renamed, "it names a function, not this task"), (in_a_class, "it does not import: ")],
    ids=["a-plain-function-there", "does-not-import"],
)
@pytest.mark.parametrize(
    "build",
    [
        lambda hidden: chain(step(number, 1), step(hidden)),
        lambda hidden: group(step(number, 1), then=step(hidden.using(queue_name="emails"))),
    ],
    ids=["a-later-chain-step", "a-callback"],
)
@pytest.mark.parametrize("launch", ["enqueue", "aenqueue"])
def test_a_step_no_worker_could_find_is_refused_with_nothing_stored(
    backend: ThreadmillTaskBackend,
    hidden: Task,
    why: str,
    build: Callable[[Task], Chain | Group],
    launch: str,
) -> None:
    """Accepted, the workflow was stored and its first step ran; the step failed only once it
    was due, in the worker, with NotATask or TaskNotImportable."""
    flow = build(hidden)
    message = f"Task {hidden.module_path!r} is not found at its own path ({why}"
    enqueue = flow.enqueue if launch == "enqueue" else lambda: asyncio.run(flow.aenqueue())

    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}"):
        enqueue()

    assert backend.broker.recent_workflows(10) == []
    assert drain(wait_for_delayed=0) == 0


def test_a_step_found_at_its_path_in_any_of_its_variants_is_launched(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = group(
        step(number, 1), step(number.using(priority=5), 2), then=step(collect.using(priority=1))
    ).enqueue()

    assert drain() == 3
    flow.refresh()
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [1, 2]
