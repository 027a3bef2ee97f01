"""Tasks a TestCase's ``setUpTestData`` or ``setUpClass`` enqueue are named, with the fix, by
the class's first test.

ThreadmillTestMixin starts each test from an empty Redis. A task enqueued once for the class (a
user saved in ``setUpTestData`` whose signal enqueues the welcome email) was deleted by the flush
before the first test: the test's drain returned 0, and nothing said why, where the
``threadmill`` fixture names the tasks a fixture set up before it enqueued.
"""

import logging

import pytest
from django.test import SimpleTestCase, TestCase

from django_threadmill.testing import ThreadmillTestMixin

from . import tasks
from .cases import run_case
from .said import warnings_of

drained: list[int] = []  # what each test of EnqueuesForTheClass drained, in order


class EnqueuesForTheClass(ThreadmillTestMixin, TestCase):
    """Two tests of a class whose ``setUpTestData`` enqueues twice; run by the tests below, in
    their own settings (pytest would set the class up before the suite's TASKS override)."""

    __test__ = False

    @classmethod
    def setUpTestData(cls) -> None:
        tasks.record.enqueue("welcome")
        tasks.record.enqueue("welcome")

    def test_first(self) -> None:
        drained.append(self.drain())

    def test_second(self) -> None:
        drained.append(self.drain())


class EnqueuesInItsSetUpClass(ThreadmillTestMixin, SimpleTestCase):
    __test__ = False

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        tasks.record_report.enqueue("report")

    def test_drain(self) -> None:
        self.drain()


@pytest.mark.django_db
def test_the_first_test_names_the_tasks_of_setuptestdata_once_and_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    drained.clear()
    with caplog.at_level(logging.WARNING):
        run_case(EnqueuesForTheClass)
    assert drained == [0, 0]
    [said] = warnings_of(caplog)
    assert said.startswith(
        "drain() cannot run 2 tasks enqueued in setUpClass or setUpTestData of "
        "EnqueuesForTheClass ('tests.testing.tasks.record' x2): ThreadmillTestMixin starts each "
        "test from an empty Redis, so its flush before the first test deleted them. "
    )
    assert "enqueue in setUp, after super().setUp(), or in the test" in said


def test_a_task_of_setupclass_is_named_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        run_case(EnqueuesInItsSetUpClass)
    [said] = warnings_of(caplog)
    assert said.startswith(
        "drain() cannot run 1 task enqueued in setUpClass or setUpTestData of "
        "EnqueuesInItsSetUpClass ('tests.testing.tasks.record_report'): "
    )
