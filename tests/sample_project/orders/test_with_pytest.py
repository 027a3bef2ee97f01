"""The sample's tasks tested with pytest-django: the ``threadmill`` fixture and ``db``."""

import logging
from unittest import mock

import pytest
from django.utils import timezone

from django_threadmill.compat import Task, TaskResultStatus
from django_threadmill.testing import Threadmill

from . import tasks
from .models import Order


@pytest.fixture(params=["sync", "async"])
def lane(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def place_order(lane: str) -> Task:
    return tasks.place_order if lane == "sync" else tasks.aplace_order


@pytest.fixture
def charge(lane: str) -> Task:
    return tasks.charge if lane == "sync" else tasks.acharge


def test_the_row_a_task_writes_is_in_the_tests_database(
    db: None, threadmill: Threadmill, place_order: Task
) -> None:
    result = place_order.enqueue("book")
    assert threadmill.drain() == 1
    result.refresh()
    assert result.return_value == Order.objects.get(item="book").pk


def test_a_retried_task_runs_again_until_it_succeeds(
    db: None, threadmill: Threadmill, charge: Task
) -> None:
    down = ConnectionError("the provider is down")
    with mock.patch("orders.services.charge_card", side_effect=[down, down, "ch_1"]):
        result = charge.enqueue(100)
        assert threadmill.drain() == 3
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == ["ch_1", 3]
    assert [error.exception_class for error in result.errors] == [ConnectionError] * 2


def test_a_task_delayed_until_now_runs(db: None, threadmill: Threadmill, place_order: Task) -> None:
    place_order.using(run_after=timezone.now()).enqueue("book")
    assert threadmill.drain() == 1
    assert Order.objects.filter(item="book").exists()


def test_the_task_calls_the_mock_set_in_the_test(
    db: None, threadmill: Threadmill, place_order: Task
) -> None:
    with mock.patch("orders.services.send_receipt") as send_receipt:
        place_order.enqueue("book")
        threadmill.drain()
    send_receipt.assert_called_once_with(Order.objects.get(item="book").pk)


def test_the_tasks_log_lines_are_captured(
    db: None, threadmill: Threadmill, place_order: Task, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="orders.tasks"):
        place_order.enqueue("book")
        threadmill.drain()
    assert "Order placed item=book" in caplog.text


def test_a_task_left_queued_is_gone_by_the_next_test(
    db: None, threadmill: Threadmill, place_order: Task
) -> None:
    # Were it not flushed, the next test's drain would run it and count one more.
    place_order.enqueue("left behind")
