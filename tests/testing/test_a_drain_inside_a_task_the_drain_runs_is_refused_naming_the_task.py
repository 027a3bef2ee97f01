"""drain() called by a task a drain runs is refused, naming that task; the running drain runs
what the task enqueued once it returns.

A drain inside a drain ran outside the outer's ``max_tasks`` bound and returned a count the
outer one never added: a task that enqueued itself and drained again went 95 drains deep,
until Python's recursion limit failed one of them at whatever step it had reached (an enqueue,
a write of an outcome), a bare RecursionError, never the DrainDidNotEmpty the bound promises.
"""

import re

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import DrainDidNotEmpty
from django_threadmill.testing import Threadmill

from . import tasks, tasks_that_drain


def refusal(path: str) -> str:
    return (
        "drain() was called inside the drain() running in this thread, from the task "
        f"'tests.testing.tasks_that_drain.{path}' it runs, or code that task calls. "
    )


def assert_refused(result: TaskResult, path: str) -> None:
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class for error in result.errors] == [RuntimeError]
    last_line = result.errors[0].traceback.strip().splitlines()[-1]
    assert last_line.startswith(f"RuntimeError: {refusal(path)}")


def test_a_task_that_drains_fails_naming_itself_and_the_drain_runs_what_it_enqueued(
    threadmill: Threadmill,
) -> None:
    parent = tasks_that_drain.enqueues_two_then_drains.enqueue()

    assert threadmill.drain() == 3  # the parent, then its two children, in this drain

    assert_refused(parent, "enqueues_two_then_drains")
    assert "return from it instead of draining" in parent.errors[0].traceback
    assert [label for label, _ in tasks.runs] == ["child 1", "child 2"]


def test_a_task_that_enqueues_itself_and_drains_reaches_the_bound_not_the_recursion_limit(
    threadmill: Threadmill,
) -> None:
    first = tasks_that_drain.enqueues_itself_then_drains.enqueue()
    named = "'tests.testing.tasks_that_drain.enqueues_itself_then_drains' ran 5 times."

    with pytest.raises(DrainDidNotEmpty, match=re.escape(named)) as raised:
        threadmill.drain(max_tasks=5)

    assert raised.value.ran == 5
    assert_refused(first, "enqueues_itself_then_drains")


@pytest.mark.parametrize("path", ["adrains_through_sync_to_async", "adrains_on_its_loop"])
def test_an_async_task_that_drains_is_refused_the_same_way(
    threadmill: Threadmill, path: str
) -> None:
    parent = getattr(tasks_that_drain, path).enqueue()

    assert threadmill.drain() == 2

    assert_refused(parent, path)
    assert [label for label, _ in tasks.runs] == ["child of async"]


def test_in_a_batch_of_async_tasks_every_one_running_is_named(threadmill: Threadmill) -> None:
    parent = tasks_that_drain.adrains_on_its_loop.enqueue()
    tasks.threads_seen.enqueue()  # runs beside it on the loop: which one drained is not known

    assert threadmill.drain() == 3

    parent.refresh()
    message = (
        "drain() was called inside the drain() running in this thread, from one of the tasks "
        "'tests.testing.tasks_that_drain.adrains_on_its_loop', 'tests.testing.tasks.threads_seen' "
        "it runs, or code they call. "
    )
    assert message in parent.errors[0].traceback
