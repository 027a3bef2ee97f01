"""drain() says when it leaves tasks that a concurrency limit held back: slots another holder
took (a worker the test started, a reservation it made) give the drain none of the queue's
tasks, and it returned its count with no word on why."""

import pytest
from django.test import override_settings

from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.testing import Threadmill
from tests.conftest import tasks_setting

from . import tasks
from .said import warnings_of


def test_tasks_a_full_concurrency_limit_holds_back_are_said_to_be_left(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture, redis_url: str, key_prefix: str
) -> None:
    limits = {"reports": {"concurrency": 1}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, queue_limits=limits)):
        held = tasks.record_report.enqueue("held elsewhere")
        [reservation] = task_backends["default"].broker.acquire("reports", 1).reservations
        assert reservation.lease.task_id == held.id
        left = [tasks.record_report.enqueue(str(n)) for n in range(2)]
        assert threadmill.drain(queues=["reports"]) == 0
        for result in left:
            result.refresh()
            assert result.status == TaskResultStatus.READY
    [said] = warnings_of(caplog)
    assert said == (
        "drain() returned 0 and left 2 tasks in the queue 'reports', whose concurrency limit "
        "of 1 was held full by tasks this drain did not take: a worker's, a reservation the test "
        "made, or a lease of a process that died, which holds its slot until the reaper settles "
        "it (docs/schedules.md, Per-queue limits). Let those tasks finish (or reap them) before "
        "the drain, or raise the queue's 'concurrency' in OPTIONS['queue_limits'] for the test."
    )
