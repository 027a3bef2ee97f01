"""drain() in a Django TestCase, whose transaction never commits: what tasks leave for the
commit (an enqueue with enqueue_on_commit) happens when they end, as a worker's commit would.

A child enqueued that way by a task once waited for a commit that never came: the drain ran
the parent only, and the child was never stored.
"""

from django.db import connection
from django.test import TestCase

from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import ThreadmillTestMixin

from . import tasks


class TasksEnqueuedOnCommitByTasks(ThreadmillTestMixin, TestCase):
    def test_a_childs_enqueue_waiting_for_the_commit_runs_in_the_same_drain(self) -> None:
        tasks.spawns_on_commit.enqueue("parent")
        assert self.drain() == 2
        assert [label for label, _ in tasks.runs] == ["parent", "parent's child"]


class ATaskThatLeavesATransactionOpen(ThreadmillTestMixin, TestCase):
    def test_it_fails_and_the_tests_transaction_is_as_it_was(self) -> None:
        """It once succeeded, and the next test began one atomic() deeper."""
        depth = len(connection.atomic_blocks)
        result = tasks.leaves_a_transaction_open.enqueue()
        assert self.drain() == 1
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        assert result.errors[0].exception_class_path.endswith("TransactionLeftOpen")
        assert len(connection.atomic_blocks) == depth
