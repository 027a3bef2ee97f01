"""drain() says, in a warning, what it leaves unrun that the test may have meant it to run.

A drain once returned its count and nothing else when tasks were due past wait_for_delayed (a
run_after an hour away, a retry's backoff) or when the test's enqueues with enqueue_on_commit
still waited for the commit a TestCase never makes: the test saw a number short of what it
expected, and no word on why.
"""

import re
from datetime import timedelta

import pytest
from django.test import TestCase, override_settings
from django.utils import timezone

from django_threadmill.testing import Threadmill, ThreadmillTestMixin
from tests.conftest import tasks_setting

from . import tasks
from .said import LOGGER, warnings_of


def test_tasks_due_past_the_wait_are_counted_with_the_next_due_time_and_the_fix(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    tomorrow = timezone.now() + timedelta(days=1)
    tasks.record.using(run_after=tomorrow).enqueue("tomorrow")
    tasks.record.using(run_after=tomorrow + timedelta(hours=1)).enqueue("later still")
    tasks.record.enqueue("now")
    assert threadmill.drain() == 1
    [said] = warnings_of(caplog)
    assert said.startswith(
        "drain() returned 1 and left 2 tasks in the queues ['default', 'emails', 'reports'], "
        "the next due in "
    )
    assert re.search(r"the next due in (23:59:\d\d|1 day, 0:00:00): later than ", said)
    assert "wait_for_delayed=5.0 s" in said
    assert "Pass drain(wait_for_delayed=...) a longer wait" in said
    assert "freezegun and time-machine do not move" in said


def test_a_retry_backing_off_past_the_wait_is_said_to_be_left(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.fails_then_waits_a_minute.enqueue()
    assert threadmill.drain(wait_for_delayed=0) == 1
    [said] = warnings_of(caplog)
    assert said.startswith("drain() returned 1 and left 1 task in the queues ")
    assert "later than wait_for_delayed=0.0 s" in said


def test_tasks_a_rate_limit_holds_back_are_said_to_be_so_with_the_wait_in_seconds(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture, redis_url: str, key_prefix: str
) -> None:
    """The warning spoke of delays and retries only, and rounded a rate's next start, a few
    seconds or less away, to whole seconds ("the next due in 0:00:00")."""
    limits = {"reports": {"rate": "6/m"}}  # one start every 10 s
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, queue_limits=limits)):
        for n in range(3):
            tasks.record_report.enqueue(str(n))
        assert threadmill.drain(queues=["reports"], wait_for_delayed=0) == 1
    [said] = warnings_of(caplog)
    assert re.search(r"left 2 tasks in the queues \['reports'\], the next due in \d+\.\d s", said)
    assert "Rate limits ('reports': 6/m) space their queues' starts on that clock too." in said
    assert said.endswith(
        "a shorter run_after or retry delay, or a faster rate in OPTIONS['queue_limits']."
    )


def test_a_drain_that_empties_its_queues_says_nothing(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    soon = timezone.now() + timedelta(milliseconds=100)
    tasks.record.using(run_after=soon).enqueue("soon")
    tasks.record.enqueue("now")
    assert threadmill.drain() == 2
    assert warnings_of(caplog) == []


class EnqueuesWaitingForTheTestCasesCommit(ThreadmillTestMixin, TestCase):
    def test_they_are_named_with_captureoncommitcallbacks(self) -> None:
        waits = tasks.record.using(enqueue_on_commit=True)
        waits.enqueue("one")
        waits.enqueue("two")
        with self.assertLogs(LOGGER, "WARNING") as said:
            assert self.drain() == 0
        [message] = said.output
        assert message.startswith(
            "WARNING:django_threadmill.testing.not_run:drain() cannot run 2 tasks enqueued "
            "with enqueue_on_commit ('tests.testing.tasks.record' x2): they are stored when "
            "the transaction of database 'default' commits, and a TestCase's never does. "
            "Enqueue inside `with self.captureOnCommitCallbacks(execute=True):`"
        )

    def test_once_captureoncommitcallbacks_ran_them_nothing_is_said_and_they_run(self) -> None:
        """Django leaves the callbacks it ran in the transaction's list: they are not
        mistaken for enqueues still waiting."""
        with self.captureOnCommitCallbacks(execute=True):
            tasks.record.using(enqueue_on_commit=True).enqueue("committed")
        with self.assertNoLogs(LOGGER, "WARNING"):
            assert self.drain() == 1
        assert [label for label, _ in tasks.runs] == ["committed"]

    def test_a_drain_inside_the_capturing_block_is_told_to_drain_after_it(self) -> None:
        with self.captureOnCommitCallbacks(execute=True):
            tasks.record.using(enqueue_on_commit=True).enqueue("too early")
            with self.assertLogs(LOGGER, "WARNING") as said:
                assert self.drain() == 0
        assert "drain after that block" in said.output[0]
        assert self.drain() == 1
