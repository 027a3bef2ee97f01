"""A drain stopped by its ``max_tasks`` bound says whether tasks were enqueued while it ran.

The error blamed a task that enqueues itself, or tasks that enqueue each other, whatever kept
the queues full: a test that had enqueued more tasks than ``max_tasks`` itself, with no task
enqueuing another, was sent looking for a loop that was not there.
"""

import re

import pytest

from django_threadmill.exceptions import DrainDidNotEmpty
from django_threadmill.testing import Threadmill

from . import tasks

NO_LOOP = (
    "No task was enqueued while it ran, so none enqueues itself: the tasks queued before it "
    "began, with their retries, were more than that. Pass drain(max_tasks=...) a higher bound "
    "if the test means to run that many."
)


def test_more_tasks_than_the_bound_enqueued_by_the_test_are_said_to_be_no_loop(
    threadmill: Threadmill,
) -> None:
    for n in range(4):
        tasks.record.enqueue(str(n))

    with pytest.raises(DrainDidNotEmpty) as raised:
        threadmill.drain(max_tasks=3)

    assert str(raised.value) == (
        "drain() ran max_tasks=3 tasks and the queues ['default', 'emails', 'reports'] are "
        "still not empty: 'tests.testing.tasks.record' ran 3 times. " + NO_LOOP
    )
    assert raised.value.ran == 3


def test_a_task_that_enqueues_itself_is_said_to_have_enqueued_while_it_ran(
    threadmill: Threadmill,
) -> None:
    tasks.enqueues_itself.enqueue()

    with pytest.raises(DrainDidNotEmpty) as raised:
        threadmill.drain(max_tasks=3)

    said = str(raised.value)
    assert re.search(
        r"ran 3 times\. 3 tasks were enqueued while it ran: a task that enqueues itself, or "
        r"tasks that enqueue each other, never empty their queues\. Break the loop",
        said,
    ), said
    assert NO_LOOP not in said
