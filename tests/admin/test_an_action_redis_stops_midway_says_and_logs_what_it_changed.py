"""An action Redis stops midway (an outage, a key of another type in one queue) says what it
changed before it stopped, logs it, and names where it stopped: the error page alone hid the
tasks it had changed from the operator and from the audit log."""

import logging
from datetime import timedelta

import pytest
import redis
from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add, send_welcome
from tests.admin.conftest import act, post_action, successful_task


def test_a_cancel_redis_stops_midway_reports_and_logs_the_tasks_it_cancelled(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    finished = successful_task(backend)
    first, second = add.enqueue(1, 1).id, add.enqueue(1, 2).id
    in_emails = send_welcome.enqueue("ada@example.com").id
    last = add.enqueue(1, 3).id
    # Something else wrote the emails queue's done index: Redis refuses a cancel there.
    redis_client.set(f"{key_prefix}:{{default:emails}}:done", "not a sorted set")

    with caplog.at_level(logging.INFO, logger="django_threadmill.admin.audit"):
        messages = act(operator, "cancel", first, second, finished, in_emails, last)

    assert [backend.get_result(task_id).status for task_id in (first, second, in_emails, last)] == [
        TaskResultStatus.FAILED,
        TaskResultStatus.FAILED,
        TaskResultStatus.READY,
        TaskResultStatus.READY,
    ]
    assert messages[:2] == [
        "2 tasks cancelled.",
        f"1 left alone: not READY or delayed when the action came to them: {finished}.",
    ]
    assert messages[2].startswith(f"Stopped at {in_emails}, which may or may not be cancelled: ")
    assert "{default:emails}:done" in messages[2]
    assert messages[2].endswith(
        " 1 more were not tried. Once Redis answers, run the action again: it leaves alone the "
        "tasks already cancelled."
    )
    assert caplog.messages == [
        "Admin cancel backend=default selected=5 changed=2 left_alone=1 unsettled=2 "
        "incomplete=yes by=operator in the admin"
    ]


def test_a_cancel_on_a_filter_redis_stops_midway_logs_the_tasks_it_cancelled(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The walk meets the READY tasks first, then the delayed ones, in the emails queue."""
    in_default = [add.enqueue(1, n).id for n in range(3)]
    now = timezone.now()
    # Due a second apart: the walk meets delayed tasks by due time, and one time for both left
    # their order to their ids.
    in_emails = [
        add.using(queue_name="emails", run_after=now + timedelta(hours=1, seconds=n))
        .enqueue(1, n)
        .id
        for n in range(2)
    ]
    redis_client.set(f"{key_prefix}:{{default:emails}}:done", "not a sorted set")

    with caplog.at_level(logging.INFO, logger="django_threadmill.admin.audit"):
        messages = post_action(operator, {"action": "cancel", "across": "1"})

    statuses = [backend.get_result(task_id).status for task_id in in_default + in_emails]
    assert statuses == [TaskResultStatus.FAILED] * 3 + [TaskResultStatus.READY] * 2
    assert messages[0] == "3 tasks cancelled."
    assert messages[1].startswith(f"Stopped at {in_emails[0]}, which may or may not be ")
    assert caplog.messages == [
        "Admin cancel backend=default filter=all changed=3 left_alone=0 unsettled=2 "
        "incomplete=yes by=operator in the admin"
    ]
