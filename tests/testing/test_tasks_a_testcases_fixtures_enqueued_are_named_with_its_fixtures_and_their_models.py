"""Tasks a TestCase's ``fixtures`` enqueue as Django loads them for the class (a row saved
whose ``post_save`` receiver enqueues the welcome email) are named, by the class's first test,
with the fixtures and the models whose rows enqueued them, and a fix that fits.

A TestCase loads its fixtures once, in ``setUpClass``, and ThreadmillTestMixin's flush before
the first test deletes what their saves enqueued. The warning said they were "enqueued in
setUpClass or setUpTestData" of a class that had neither, and told the user to enqueue in
``setUp``: nothing pointed at the fixtures.
"""

import logging
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import TestCase

from django_threadmill.testing import ThreadmillTestMixin

from . import tasks
from .cases import groups_fixture, run_case
from .said import warnings_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def fixture_file(tmp_path: Path) -> Iterator[str]:
    """A fixture of two groups, and the receiver that enqueues as they are loaded."""
    with groups_fixture(tmp_path, ["g1", "g2"]) as path:
        yield path


def run(case: type[unittest.TestCase]) -> list[int]:
    """Run ``case``'s test; return what it drained."""
    drained: list[int] = []

    class Once(case):  # type: ignore[valid-type, misc]
        def test_drain(self) -> None:
            drained.append(self.drain())

    run_case(Once)
    return drained


def test_the_warning_names_the_fixtures_and_the_models_whose_rows_enqueued(
    fixture_file: str, caplog: pytest.LogCaptureFixture
) -> None:
    class LoadsGroups(ThreadmillTestMixin, TestCase):
        fixtures = [fixture_file]

    with caplog.at_level(logging.WARNING):
        assert run(LoadsGroups) == [0]
    [said] = warnings_of(caplog)
    assert said.startswith(
        f"drain() cannot run 2 tasks enqueued as the fixtures {[fixture_file]} of "
        "run.<locals>.Once loaded ('tests.testing.tasks.record' x2, saving rows of auth.Group): "
        "a TestCase loads its fixtures once for the class, "
    )
    assert "setUpTestData" not in said
    assert "Have the receiver that enqueues skip a fixture's rows" in said
    assert "or make the class a TransactionTestCase" in said


def test_a_task_setuptestdata_enqueued_beside_them_is_named_apart(
    fixture_file: str, caplog: pytest.LogCaptureFixture
) -> None:
    class LoadsGroupsAndEnqueues(ThreadmillTestMixin, TestCase):
        fixtures = [fixture_file]

        @classmethod
        def setUpTestData(cls) -> None:
            tasks.record_report.enqueue("report")

    with caplog.at_level(logging.WARNING):
        assert run(LoadsGroupsAndEnqueues) == [0]
    fixtures_said, set_up_said = warnings_of(caplog)
    assert fixtures_said.startswith("drain() cannot run 2 tasks enqueued as the fixtures ")
    assert set_up_said.startswith(
        "drain() cannot run 1 task enqueued in setUpClass or setUpTestData of run.<locals>.Once "
        "('tests.testing.tasks.record_report'): "
    )
