"""The sample's tasks tested with Django's TestCase and ThreadmillTestMixin (under pytest, or
``python manage.py test orders.test_with_testcase``)."""

from unittest import mock

from django.test import TestCase
from django.utils import timezone

from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import ThreadmillTestMixin

from . import tasks
from .models import Order


class OrderTasksTest(ThreadmillTestMixin, TestCase):
    """The plain-function tasks; AsyncOrderTasksTest runs the same tests on the async ones."""

    place_order = tasks.place_order
    charge = tasks.charge

    def test_the_row_a_task_writes_is_in_the_tests_database(self) -> None:
        result = self.place_order.enqueue("book")
        assert self.drain() == 1
        result.refresh()
        assert result.return_value == Order.objects.get(item="book").pk

    def test_a_retried_task_runs_again_until_it_succeeds(self) -> None:
        down = ConnectionError("the provider is down")
        with mock.patch("orders.services.charge_card", side_effect=[down, down, "ch_1"]):
            result = self.charge.enqueue(100)
            assert self.drain() == 3
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.return_value == ["ch_1", 3]
        assert len(result.errors) == 2

    def test_a_task_delayed_until_now_runs(self) -> None:
        self.place_order.using(run_after=timezone.now()).enqueue("book")
        assert self.drain() == 1
        assert Order.objects.filter(item="book").exists()

    def test_the_task_calls_the_mock_set_in_the_test(self) -> None:
        with mock.patch("orders.services.send_receipt") as send_receipt:
            self.place_order.enqueue("book")
            self.drain()
        send_receipt.assert_called_once_with(Order.objects.get(item="book").pk)

    def test_the_tasks_log_lines_are_captured(self) -> None:
        with self.assertLogs("orders.tasks", "INFO") as logs:
            self.place_order.enqueue("book")
            self.drain()
        assert "Order placed item=book" in logs.output[0]

    def test_a_task_left_queued_is_gone_by_the_next_test(self) -> None:
        # Were it not flushed, the next test's drain would run it and count one more.
        self.place_order.enqueue("left behind")


class AsyncOrderTasksTest(OrderTasksTest):
    place_order = tasks.aplace_order
    charge = tasks.acharge
