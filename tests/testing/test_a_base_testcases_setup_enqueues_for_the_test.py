"""A project's own base TestCase, listed after ThreadmillTestMixin, whose ``setUp`` enqueues
(a user saved there, a signal enqueueing the welcome email): the test's drain runs that task.

The mixin flushed Redis after ``super().setUp()`` returned, so after the base class had set up:
a task enqueued there, as the docs ask (after ``super().setUp()``), was deleted unseen, and the
test's drain returned 0. In a parallel run it went to keys other than the process's own too.
"""

import pytest
from django.test import SimpleTestCase, TestCase, override_settings
from django.test import runner as django_runner

from django_threadmill.aliases import threadmill_backend
from django_threadmill.compat import TaskResult
from django_threadmill.testing import ThreadmillTestMixin
from tests.conftest import tasks_setting

from . import tasks
from .cases import run_case


class EnqueuesInItsSetUp(SimpleTestCase):
    """A project's base class: each test starts with a task enqueued."""

    welcome: TaskResult

    def setUp(self) -> None:
        super().setUp()
        self.welcome = tasks.record.enqueue("welcome")


class ATestOnTheProjectsBase(ThreadmillTestMixin, EnqueuesInItsSetUp, TestCase):
    def test_the_drain_runs_the_task_its_base_class_enqueued(self) -> None:
        assert self.drain() == 1
        assert [label for label, _ in tasks.runs] == ["welcome"]


def test_in_a_parallel_run_it_goes_to_the_processs_own_keys_and_runs(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, key_prefix: str
) -> None:
    monkeypatch.setattr(django_runner, "_worker_id", 2)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this suite's own, under xdist
    seen: list[tuple[int, str]] = []

    @override_settings(TASKS=tasks_setting(redis_url, f"{key_prefix}-class"))
    class OnTheBaseWithItsOwnTasks(ThreadmillTestMixin, EnqueuesInItsSetUp):
        def test_drain(self) -> None:
            seen.append((self.drain(), threadmill_backend("default").settings.key_prefix))

    run_case(OnTheBaseWithItsOwnTasks)
    assert seen == [(1, f"{key_prefix}-class-django2")]
