"""drain() says, in a warning, that it left the tasks of a paused queue, who paused it and how
to resume it.

A paused queue answers acquire as an empty one does, so a drain returned 0 and said nothing while
its tasks waited READY: a test that paused the queue earlier, or met a pause left in Redis, saw
a count short of what it expected, and no word on why (docs/testing.md, What a drain leaves).
"""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from django_threadmill.compat import task_backends
from django_threadmill.testing import Threadmill

from . import tasks
from .said import warnings_of


def pause(queue: str, reason: str = "") -> None:
    task_backends["default"].broker.pause(queue, "ada in the admin", reason)


def test_the_paused_queue_is_named_with_its_tasks_its_pause_and_the_fix(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.record.enqueue("one")
    tasks.record.enqueue("two")
    pause("default", "deploying")

    assert threadmill.drain() == 0

    [said] = warnings_of(caplog)
    assert said == (
        "drain() returned 0 and left 2 tasks in the queue 'default', which is paused (by ada in "
        "the admin, reason: 'deploying'): a paused queue hands none of its tasks to a drain, as "
        "to a worker. Resume it before the drain: in the test, "
        "task_backends['default'].broker.resume('default', by='the test'); a pause left in "
        "Redis, with `manage.py threadmill_queue resume default --backend default` or the "
        "admin's Resume… button (docs/lifecycle.md, Pausing a queue)."
    )
    task_backends["default"].broker.resume("default", by="the test")  # the fix it names
    assert threadmill.drain() == 2
    assert sorted(label for label, _ in tasks.runs) == ["one", "two"]


def test_the_other_queues_run_and_tasks_left_for_later_are_counted_apart(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    """A delayed task in the paused queue is never promoted: it is counted with the pause, and
    the warning about tasks due later counts only the queues that are not paused."""
    tasks.record.enqueue("paused")
    tasks.record.using(run_after=timezone.now()).enqueue("due, not promoted")
    tasks.record_report.enqueue("runs")
    tasks.record_report.using(run_after=timezone.now() + timedelta(days=1)).enqueue("tomorrow")
    pause("default")

    assert threadmill.drain() == 1

    later, paused = warnings_of(caplog)
    assert later.startswith(
        "drain() returned 1 and left 1 task in the queues ['emails', 'reports'], the next due in "
    )
    assert re.match(
        r"drain\(\) returned 1 and left 2 tasks in the queue 'default', which is paused \(by "
        r"ada in the admin\): ",
        paused,
    )
    assert [label for label, _ in tasks.runs] == ["runs"]


def test_a_paused_queue_with_nothing_in_it_is_not_mentioned(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    pause("default")
    pause("emails")  # with no limit, an empty queue answers before its pause is looked at
    tasks.record_report.enqueue("runs")
    assert threadmill.drain() == 1
    assert warnings_of(caplog) == []
