"""drain() in a Django TestCase, whose transaction never commits: what tasks leave for the
commit (an enqueue with enqueue_on_commit) happens when they end, as a worker's commit would.

A child enqueued that way by a task once waited for a commit that never came: the drain ran
the parent only, and the child was never stored.
"""

from django.test import TestCase

from django_threadmill.testing import ThreadmillTestMixin

from . import tasks


class TasksEnqueuedOnCommitByTasks(ThreadmillTestMixin, TestCase):
    def setUp(self) -> None:
        super().setUp()
        tasks.runs.clear()

    def test_a_childs_enqueue_waiting_for_the_commit_runs_in_the_same_drain(self) -> None:
        tasks.spawns_on_commit.enqueue("parent")
        assert self.drain() == 2
        assert [label for label, _ in tasks.runs] == ["parent", "parent's child"]
