"""The task list's "Showing X to Y of N." counts positions in the indexes; a task an index still
names whose record is gone (a result expired before the index is trimmed, purged, or requeued
while the page was read) takes a position and shows no row. The line says how many such the
page passed over: it said "Showing 1 to 3 of 3." above two rows."""

import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import TASKS_URL, page, successful_task


def test_a_result_whose_record_is_gone_is_counted_as_not_shown(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_ids = [successful_task(backend) for _ in range(3)]
    expired = backend.broker.record_key(task_ids[1])
    assert expired is not None
    redis_client.delete(expired)  # as its TTL does: the done index names it until trimmed

    listed = page(operator, f"{TASKS_URL}?status=finished")

    assert [t for t in task_ids if t in listed] == [task_ids[0], task_ids[2]]
    assert (
        "Showing 1 to 3 of 3; 1 of them is not shown: its record is gone (a result expired or "
        "purged, or a task requeued, since the index named it)." in listed
    )


def test_a_page_without_such_a_task_says_nothing_of_them(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    successful_task(backend)

    assert "Showing 1 to 1 of 1." in page(operator, f"{TASKS_URL}?status=finished")
