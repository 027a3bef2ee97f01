"""drain() in a test's transaction: a task's database error spoils neither the tasks after it
nor the test.

A worker runs each task's queries in autocommit, so a task whose INSERT broke a unique
constraint failed alone. In a drain the error left the test's transaction unusable: every task
after it failed with TransactionManagementError, and so did the test's own next query.
"""

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.test import TestCase

from django_threadmill.compat import TaskResult, TaskResultStatus, task
from django_threadmill.testing import ThreadmillTestMixin


@task
def creates_users(*names: str) -> None:
    """Create a user per name, each in autocommit in a worker."""
    for name in names:
        User.objects.create(username=name)


counts: list[int] = []  # what counts_users found, in the order it ran


@task
def counts_users() -> int:
    counts.append(User.objects.count())
    return counts[-1]


@task
async def enqueues_a_count_then_breaks_a_constraint(name: str) -> None:
    """Enqueue ``counts_users`` (it runs in the next batch), then create a user that exists."""
    await counts_users.aenqueue()
    await sync_to_async(User.objects.create)(username=name)


def refreshed(result: TaskResult) -> TaskResult:
    result.refresh()
    return result


class ATasksDatabaseError(ThreadmillTestMixin, TestCase):
    def setUp(self) -> None:
        super().setUp()
        counts.clear()

    def test_fails_that_task_only_and_the_test_can_query(self) -> None:
        creates_users.enqueue("ann")
        duplicate = creates_users.enqueue("bob", "ann")
        count = counts_users.enqueue()
        assert self.drain() == 3
        assert refreshed(duplicate).status == TaskResultStatus.FAILED
        assert duplicate.errors[0].exception_class is IntegrityError
        # Its writes are rolled back with it: "bob" is gone too.
        assert refreshed(count).return_value == 1, count.errors
        assert list(User.objects.values_list("username", flat=True)) == ["ann"]

    def test_of_an_async_task_spoils_not_the_next_batch(self) -> None:
        User.objects.create(username="ann")
        failing = enqueues_a_count_then_breaks_a_constraint.enqueue("ann")
        assert self.drain() == 2
        assert refreshed(failing).errors[0].exception_class is IntegrityError
        assert counts == [1]
        assert User.objects.count() == 1

    def test_the_tasks_writes_and_the_tests_own_blocks_stay(self) -> None:
        with transaction.atomic():
            User.objects.create(username="ann")
        creates_users.enqueue("bob")
        assert self.drain() == 1
        assert User.objects.count() == 2

    def test_a_query_count_around_the_drain_sees_the_tasks_queries_only(self) -> None:
        counts_users.enqueue()
        with self.assertNumQueries(1):
            assert self.drain() == 1
