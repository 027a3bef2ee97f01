"""A step takes the arguments its task's own enqueue takes, stored as Django normalises them."""

from types import MappingProxyType

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, step

from .tasks import named_task, number


def test_a_step_takes_the_arguments_django_normalises(backend: ThreadmillTaskBackend) -> None:
    """bytes, a range and a read-only mapping are what a lone enqueue stores as a str, a list
    and a dict; the workflow's plan stored them as given, which JSON refused."""
    flow = chain(
        step(number, b"one"),
        step(named_task, range(2)),
        step(named_task, MappingProxyType({"a": (1, 2)})),
    ).enqueue()

    assert drain() == 3

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.args for r in flow.results if r is not None] == [
        ["one"],
        ["one", [0, 1]],
        [["one", [0, 1]], {"a": [1, 2]}],
    ]


def test_a_task_may_take_a_keyword_argument_named_task(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 1), step(named_task, task="resize")).enqueue()

    assert drain() == 2

    flow.refresh()
    last = flow.results[-1]
    assert last is not None
    assert (last.kwargs, last.return_value) == ({"task": "resize"}, [1, "resize"])
