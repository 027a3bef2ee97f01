"""An id that is not UTF-8 in an index or list the admin reads never makes a page fail.

Only a hand edit or another program sharing the key prefix writes one (every id of ours is
ASCII). It is listed with each such byte as its escape (``\\xff``), as a record's bytes are,
as a row that names no record: "DAMAGED (id not UTF-8)", with no link and no checkbox.
"""

import html

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from tests.admin.conftest import QUEUES_URL, TASKS_URL, page, successful_task

NOT_UTF8_ID = b"\xff\xfe@default"  # no UTF-8 text starts with these bytes
SHOWN = r"\xff\xfe@default"
METRICS_URL = "/threadmill/metrics"
INDEXES = ["done", "ready", "delayed", "leases"]


def add_to(backend: ThreadmillTaskBackend, client: redis.Redis, index: str, member: bytes) -> None:
    """ZADD ``member`` to the ``index`` of queue "default", as ``redis-cli ZADD`` would."""
    client.zadd(getattr(backend.broker.queue_keys("default"), index), {member: 1})


@pytest.mark.parametrize("index", INDEXES)
def test_the_task_list_shows_an_id_not_utf8_escaped_as_a_damaged_row(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, index: str
) -> None:
    successful_task(backend)
    add_to(backend, redis_client, index, NOT_UTF8_ID)

    listed = html.unescape(page(operator, TASKS_URL))

    assert f"<td>{SHOWN}</td>" in listed  # no link: it names no record
    assert "DAMAGED (id not UTF-8)" in listed
    assert "SUCCESSFUL" in listed


@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("url", [QUEUES_URL, METRICS_URL, f"{TASKS_URL}?status=failed"])
def test_every_page_reading_an_index_answers_with_an_id_not_utf8_in_it(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    index: str,
    url: str,
) -> None:
    successful_task(backend)
    add_to(backend, redis_client, index, NOT_UTF8_ID)

    page(operator, url)


def test_a_filtered_list_skips_an_id_not_utf8_and_says_so(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    successful_task(backend)
    add_to(backend, redis_client, "done", NOT_UTF8_ID)

    listed = html.unescape(page(operator, f"{TASKS_URL}?status=successful"))

    assert SHOWN not in listed
    assert "Skipped 1 damaged record no filter can read" in listed


def test_an_id_not_utf8_a_worker_set_aside_is_listed_escaped_on_the_queues_page(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    add_to(backend, redis_client, "ready", NOT_UTF8_ID)
    drain()  # acquire sets it aside in P:damaged under its own bytes

    queues = html.unescape(page(operator, QUEUES_URL))

    assert f"<td>{SHOWN}</td>" in queues  # no link to a page: it names no record


def test_a_worker_id_not_utf8_is_shown_escaped(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    add_to(backend, redis_client, "workers", b"host\xff:1:abcd")  # score 1: a silent worker

    assert r"host\xff" in html.unescape(page(operator, QUEUES_URL))


def test_a_workflow_id_not_utf8_is_listed_escaped_as_expired(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    redis_client.zadd(backend.broker.keyspace.workflows, {b"wf\xff": 1})

    listed = html.unescape(page(operator, f"{TASKS_URL}workflows/"))

    assert r"<td>wf\xff</td>" in listed
