"""The Delayed list shows when each task is due: its place in the delayed index, which it is
sorted by. Its "Run after" column showed the task's run_after, an hour past for a task whose
retry is due in an hour, and nothing for a retry of a task enqueued without one."""

import re
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import from_ms, now_ms
from testproject.example.tasks import add
from tests.admin.conftest import TASKS_URL
from tests.backend_support import WORKER, start

HOUR_MS = 3_600_000


def retried_in_an_hour(backend: ThreadmillTaskBackend, task_id: str) -> int:
    """Run ``task_id`` and fail its attempt with a retry an hour later; return its due time."""
    lease = start(backend, task_id)
    failed = Finish(
        lease=lease,
        outcome=Outcome.RETRY,
        value=error_json(ConnectionError("no answer")),
        started_ms=now_ms(),
        finished_ms=now_ms(),
        retry_delay_ms=HOUR_MS,
    )
    assert backend.broker.finish(WORKER, [failed]) == []
    [due] = backend.broker.client.zrange(
        backend.broker.queue_keys("default").delayed, 0, -1, withscores=True
    )
    assert due[0] == task_id
    return int(due[1])


def test_a_retry_is_listed_with_its_due_time_not_its_run_after(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.using(run_after=timezone.now() - timedelta(hours=1)).enqueue(1, 2).id
    due = from_ms(retried_in_an_hour(backend, task_id))
    assert due is not None

    page = operator.get(TASKS_URL, {"status": "delayed"}).content.decode()

    when = re.findall(r'<td class="tm-when">(.*?)</td>', page)[1]
    assert when == due.strftime("%Y-%m-%d %H:%M:%S")
    assert "<th>Due</th>" in page


def test_a_task_enqueued_with_a_run_after_is_listed_due_then(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    run_after = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    add.using(run_after=run_after).enqueue(1, 2)

    page = operator.get(TASKS_URL, {"status": "delayed"}).content.decode()

    when = re.findall(r'<td class="tm-when">(.*?)</td>', page)[1]
    assert when == run_after.strftime("%Y-%m-%d %H:%M:%S")
