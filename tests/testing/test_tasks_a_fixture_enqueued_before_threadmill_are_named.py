"""Tasks a test's fixtures enqueue before its ``threadmill`` fixture is set up are named, with
the fix.

The fixture starts each test from an empty Redis. A fixture set up before it (listed first in
the test's arguments: a ``user`` whose save enqueues a welcome mail, say) had its tasks deleted
by that flush, and under pytest-xdist written to keys the test does not use: ``drain()``
returned 0, and nothing said why.
"""

import logging

import pytest
import redis

from django_threadmill.compat import TaskResult
from django_threadmill.testing import Threadmill

from . import tasks
from .said import LOGGER


@pytest.fixture
def enqueued_first(redis_client: redis.Redis) -> TaskResult:
    """Enqueue two tasks, as a project's fixture may; under pytest-xdist they go to the prefix
    without the worker's name, whose keys ``redis_client`` deletes after the test."""
    tasks.record.enqueue("from a fixture")
    return tasks.record.enqueue("from a fixture")


@pytest.fixture
def enqueued_by_another(redis_client: redis.Redis) -> TaskResult:
    return tasks.record_report.enqueue("from another fixture")


@pytest.fixture
def enqueued_under_threadmill(threadmill: Threadmill) -> TaskResult:
    return tasks.record.enqueue("from a fixture asking for threadmill")


def setup_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.get_records("setup")
        if record.name.startswith(LOGGER) and record.levelno == logging.WARNING
    ]


def test_a_fixture_set_up_before_threadmill_is_told_to_ask_for_it(
    enqueued_first: TaskResult, threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    assert threadmill.drain() == 0
    [said] = setup_warnings(caplog)
    assert said.startswith(
        "drain() cannot run 2 tasks enqueued before the threadmill fixture was set up "
        "('tests.testing.tasks.record' x2, by the fixture 'enqueued_first'): "
    )
    assert "Have the fixture that enqueues them ask for threadmill" in said
    assert "list threadmill before it in the test's arguments" in said


def test_a_fixture_that_asks_for_threadmill_has_its_task_run_and_nothing_said(
    enqueued_under_threadmill: TaskResult,
    threadmill: Threadmill,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert threadmill.drain() == 1
    assert setup_warnings(caplog) == []


def test_each_fixture_that_enqueued_before_threadmill_is_named(
    enqueued_first: TaskResult,
    enqueued_by_another: TaskResult,
    threadmill: Threadmill,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A test with several fixtures was told to have "the fixture that enqueues them" ask for
    threadmill, and left to find which."""
    assert threadmill.drain() == 0
    [said] = setup_warnings(caplog)
    assert said.startswith(
        "drain() cannot run 3 tasks enqueued before the threadmill fixture was set up "
        "('tests.testing.tasks.record' x2, 'tests.testing.tasks.record_report', by the "
        "fixtures 'enqueued_first', 'enqueued_by_another'): "
    )
