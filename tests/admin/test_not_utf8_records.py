"""A record holding bytes that are not UTF-8 never makes a page answer 500.

Such bytes come from something other than django-threadmill (a hand edit, another program
sharing the key prefix); a worker sets such a task aside, and the queues page links to it
(docs/lifecycle.md, Damaged records). Every page shows the record, each such byte as ``\\xNN``.
"""

import html

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, TASKS_URL, detail_url, failed_task, page

NOT_UTF8 = b"\xff\xfe"  # no UTF-8 text starts with these bytes
ACTION_URL = TASKS_URL + "action/"


def spoil(
    backend: ThreadmillTaskBackend, client: redis.Redis, task_id: str, field: str, value: bytes
) -> None:
    """Write ``value`` into ``field`` of the record of ``task_id``, as ``redis-cli HSET`` would."""
    key = backend.broker.record_key(task_id)
    assert key is not None
    client.hset(key, field, value)


def test_a_ready_task_whose_payload_is_not_utf8_is_listed_and_shown(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = add.enqueue(1, 2).id
    spoil(backend, redis_client, task_id, "payload", b'{"path":"shop.' + NOT_UTF8 + b'"}')

    listing = page(operator, TASKS_URL)
    detail = html.unescape(page(operator, detail_url(task_id)))

    assert task_id in listing
    assert r"shop.\xff\xfe" in detail
    assert "holds bytes that are not UTF-8" in detail
    assert "payload" in detail.split("holds bytes that are not UTF-8")[1].split("</p>")[0]


@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("result", "{detail}"),
        ("error:1", "{detail}"),
        ("progress_note", "{detail}"),
        ("progress_note", TASKS_URL + "?status=failed"),
        ("workers", TASKS_URL),
        ("state", QUEUES_URL),
        ("result", "{detail}raw/result/"),
    ],
)
def test_a_finished_record_with_a_field_not_utf8_answers_on_every_page(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    field: str,
    url: str,
) -> None:
    task_id = failed_task(backend)
    spoil(backend, redis_client, task_id, field, b"x" + NOT_UTF8)

    response = operator.get(url.format(detail=detail_url(task_id)))

    assert response.status_code == 200, response.content.decode()[:2000]


def test_an_action_reads_the_state_of_a_record_not_utf8(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = failed_task(backend)
    spoil(backend, redis_client, task_id, "payload", NOT_UTF8)
    form = {"action": "requeue", "_selected_action": f"default:{task_id}", "next": TASKS_URL}

    confirmation = operator.post(ACTION_URL, form)
    confirmed = operator.post(ACTION_URL, {**form, "post": "yes"})

    assert confirmation.status_code == 200
    assert f"<td>{task_id}</td><td>FAILED</td>" in confirmation.content.decode()
    assert confirmed.status_code == 302


def test_the_page_of_a_task_a_worker_set_aside_as_not_utf8_opens(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = add.enqueue(1, 2).id
    spoil(backend, redis_client, task_id, "payload", NOT_UTF8)
    drain()  # the worker's acquire sets it aside: "payload not UTF-8"

    queues = page(operator, QUEUES_URL)
    assert "payload not UTF-8" in queues
    assert detail_url(task_id) in queues  # the damaged records table links to its page

    detail = html.unescape(page(operator, detail_url(task_id)))
    assert r"\xff\xfe" in detail
