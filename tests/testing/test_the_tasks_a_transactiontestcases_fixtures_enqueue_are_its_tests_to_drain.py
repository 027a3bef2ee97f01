"""The tasks a TransactionTestCase's fixtures enqueue as Django loads them for each test (a row
saved whose ``post_save`` receiver enqueues the welcome email) are the test's: its drain runs
them, in a parallel run too, from the process's own keys.

Django loads a TransactionTestCase's fixtures before each test's ``setUp`` (the first test's
in ``setUpClass``), and ThreadmillTestMixin flushed Redis in ``setUp``: every test's drain but
the first's returned 0 and nothing said why, and the first test named the tasks as enqueued in
``setUpClass`` or ``setUpTestData``, which the class did not have.
"""

import logging
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import TransactionTestCase, override_settings
from django.test import runner as django_runner

from django_threadmill.aliases import threadmill_backend
from django_threadmill.testing import ThreadmillTestMixin
from tests.conftest import tasks_setting

from . import tasks
from .cases import groups_fixture, run_case
from .said import warnings_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fixture_file(tmp_path: Path) -> Iterator[str]:
    """A fixture of one group, and the receiver that enqueues as it is loaded."""
    with groups_fixture(tmp_path, ["staff"]) as path:
        yield path


def drains_of(case: type[unittest.TestCase]) -> list[tuple[int, str]]:
    """Run ``case``'s two tests; return what each drained and the key prefix it used."""
    drained: list[tuple[int, str]] = []

    class Twice(case):  # type: ignore[valid-type, misc]
        def test_1(self) -> None:
            drained.append((self.drain(), threadmill_backend("default").settings.key_prefix))

        def test_2(self) -> None:
            self.test_1()

    run_case(Twice)
    return drained


def test_each_tests_drain_runs_the_task_its_fixture_enqueued_and_nothing_is_said(
    fixture_file: str, caplog: pytest.LogCaptureFixture
) -> None:
    class LoadsAGroup(ThreadmillTestMixin, TransactionTestCase):
        fixtures = [fixture_file]

    with caplog.at_level(logging.WARNING):
        assert [count for count, _ in drains_of(LoadsAGroup)] == [1, 1]
    assert [label for label, _ in tasks.runs] == ["welcome staff"] * 2
    assert warnings_of(caplog) == []


def test_in_a_parallel_run_they_go_to_the_processs_own_keys_and_run(
    fixture_file: str, redis_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(django_runner, "_worker_id", 2)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this suite's own, under xdist

    @override_settings(TASKS=tasks_setting(redis_url, f"{key_prefix}-class"))
    class LoadsAGroupWithItsOwnTasks(ThreadmillTestMixin, TransactionTestCase):
        fixtures = [fixture_file]

    own = f"{key_prefix}-class-django2"
    assert drains_of(LoadsAGroupWithItsOwnTasks) == [(1, own), (1, own)]
