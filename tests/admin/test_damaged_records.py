"""Damaged records never make a page answer 500 (docs/lifecycle.md, Damaged records).

A record key of another type, a time field that is not a number, a payload that is not JSON and
an error that is not the worker's JSON each get a clear message, or a row that says what it is,
on every page that reads them.
"""

import html
import json
import re

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import (
    QUEUES_URL,
    TASKS_URL,
    detail_url,
    failed_task,
    page,
    successful_task,
)
from tests.backend_support import start, succeed

METRICS_URL = "/threadmill/metrics"


def record_key(backend: ThreadmillTaskBackend, task_id: str) -> str:
    key = backend.broker.record_key(task_id)
    assert key is not None
    return key


def replace_with_list(backend: ThreadmillTaskBackend, client: redis.Redis, task_id: str) -> str:
    """Put a list where the record of ``task_id`` was, as ``redis-cli RPUSH`` would."""
    key = record_key(backend, task_id)
    client.delete(key)
    client.rpush(key, "x")
    return key


@pytest.fixture
def damaged(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> dict[str, str]:
    """One record of another type in each index (ready, leases, done), and a readable task."""
    ids = {"failed": failed_task(backend), "successful": successful_task(backend)}
    ids["running"] = add.enqueue(2, 2).id
    start(backend, ids["running"])  # reserve() takes the only ready task: this one
    ids["ready"] = add.enqueue(1, 1).id
    add.enqueue(3, 3)  # ready behind the damaged one, so the queue still has a ready head
    for name in ("ready", "running", "failed"):
        replace_with_list(backend, redis_client, ids[name])
    return ids


def test_task_list_shows_records_of_another_type_as_damaged_rows(
    operator: Client, damaged: dict[str, str]
) -> None:
    listed = page(operator, TASKS_URL)

    for name in ("ready", "running", "failed"):
        assert f'href="{detail_url(damaged[name])}"' in listed
    assert listed.count('<span class="tm-state tm-state-damaged">DAMAGED (not a hash)</span>') == 3
    assert '<span class="tm-state tm-state-successful">SUCCESSFUL</span>' in listed


@pytest.mark.parametrize("status", ["failed", "successful", "ready"])
def test_a_filtered_task_list_skips_damaged_records_and_says_how_many(
    operator: Client, damaged: dict[str, str], status: str
) -> None:
    listed = page(operator, f"{TASKS_URL}?status={status}&task=add")

    assert damaged["failed"] not in listed
    skipped = {"failed": 1, "successful": 1, "ready": 1}[status]  # the done index holds two
    assert (
        f"Skipped {skipped} damaged record{'s' if skipped > 1 else ''} no filter can read (a key "
        "that is not a hash, or an id that is not UTF-8: docs/lifecycle.md, Damaged records)."
    ) in listed


def test_search_by_id_finds_a_damaged_record(operator: Client, damaged: dict[str, str]) -> None:
    listed = page(operator, f"{TASKS_URL}?q={damaged['ready']}")

    assert "1 task with id" in listed
    assert "DAMAGED (not a hash)" in listed


def test_detail_of_a_record_of_another_type_names_the_key_and_the_fix(
    operator: Client, backend: ThreadmillTaskBackend, damaged: dict[str, str]
) -> None:
    task_id = damaged["running"]
    shown = page(operator, detail_url(task_id))

    key = record_key(backend, task_id)
    assert (
        f"Task &#x27;{task_id}&#x27; cannot be read: its key &#x27;{key}&#x27; holds a list, "
        "not a hash, so something other than django-threadmill wrote it. Look at it "
        "(redis-cli TYPE, DUMP), then delete it or restore the record (docs/lifecycle.md, "
        "Damaged records)."
    ) in shown
    assert '<span class="tm-state tm-state-damaged">DAMAGED (not a hash)</span>' in shown
    assert "Requeue…" not in shown


def test_raw_page_of_a_record_of_another_type_is_a_404_naming_it(
    operator: Client, damaged: dict[str, str]
) -> None:
    response = operator.get(f"{detail_url(damaged['failed'])}raw/payload/")

    assert response.status_code == 404


def test_time_fields_that_are_not_numbers_show_as_unknown(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = failed_task(backend)
    key = record_key(backend, task_id)
    redis_client.hset(
        key,
        mapping={"enqueued_ms": "garbage", "started_ms": "x1", "finished_ms": "9" * 30},
    )

    listed = page(operator, TASKS_URL)
    shown = page(operator, detail_url(task_id))

    assert f'href="{detail_url(task_id)}"' in listed
    assert "<th>Enqueued</th>" not in shown
    assert "<th>Finished</th>" not in shown
    assert "Attempt 1: builtins.ValueError" in shown


def test_an_error_count_that_is_not_a_number_reads_as_none(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = failed_task(backend)
    redis_client.hset(record_key(backend, task_id), "nerrors", "many")

    shown = page(operator, detail_url(task_id))

    assert "<h2>Errors</h2>" not in shown


def test_an_error_whose_traceback_is_not_text_is_shown_as_unreadable(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A traceback of 7 made the page answer 500."""
    task_id = failed_task(backend)
    raw = json.dumps({"exception_class_path": "builtins.ValueError", "traceback": 7})
    redis_client.hset(record_key(backend, task_id), "error:1", raw)

    shown = page(operator, detail_url(task_id))
    traceback = page(operator, f"{detail_url(task_id)}raw/traceback:1/")

    assert "Attempt 1: django_threadmill.exceptions.PayloadError" in shown
    assert html.escape(f"Stored error is not readable: {raw!r}") in shown
    assert traceback == f"Stored error is not readable: {raw!r}"


def test_payload_that_is_not_json_is_shown_raw_with_the_reason(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = add.enqueue(1, 1).id
    redis_client.hset(record_key(backend, task_id), "payload", "{not json")

    listed = page(operator, TASKS_URL)
    shown = page(operator, detail_url(task_id))
    raw = page(operator, f"{detail_url(task_id)}raw/args/")

    assert f'href="{detail_url(task_id)}"' in listed
    assert re.search(r"Stored payload is not valid JSON \(.+\); it was corrupted\.", shown)
    assert "{not json" in shown
    assert raw == "[]"


def test_queues_page_counts_around_damaged_records_and_lists_those_set_aside(
    operator: Client, backend: ThreadmillTaskBackend, damaged: dict[str, str]
) -> None:
    reserved = backend.broker.acquire("default", 10).reservations  # sets the ready one aside
    assert damaged["ready"] not in [r.lease.task_id for r in reserved]

    shown = page(operator, QUEUES_URL)

    assert "<h3>Damaged records</h3>" in shown
    assert re.search(
        rf'<td>default</td><td><a href="{re.escape(detail_url(damaged["ready"]))}">'
        rf"{re.escape(damaged['ready'])}</a></td><td>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d</td>"
        r"<td>acquire</td><td>its key holds no hash \(WRONGTYPE .*\)</td>",
        shown,
    )
    assert 'status=successful">1</a>' in shown


def test_queues_page_without_damaged_records_has_no_such_table(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    add.enqueue(1, 1)
    assert "Damaged records" not in page(operator, QUEUES_URL)


def test_a_queue_key_of_the_wrong_kind_is_named_on_the_queues_page(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    add.enqueue(1, 1)
    stats = backend.broker.queue_keys("default").stats
    redis_client.rpush(stats, "x")

    shown = page(operator, QUEUES_URL)

    assert re.search(
        rf"Redis at .+ holds a value of the wrong kind in one of this backend&#x27;s keys "
        rf"\(Command # \d+ \(HGETALL {re.escape(stats)}\) of pipeline caused error: WRONGTYPE "
        r".*\)\. Something other than django-threadmill wrote to it",
        shown,
    )


def test_metrics_answer_with_damaged_records(
    operator: Client, backend: ThreadmillTaskBackend, damaged: dict[str, str]
) -> None:
    scraped = page(operator, METRICS_URL)

    assert 'threadmill_queue_tasks{backend="default",queue="default",state="ready"} 2.0' in scraped


def test_a_result_nested_too_deep_to_read_is_shown_raw(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Reading it raised RecursionError, and the page answered 500."""
    task_id = add.enqueue(1, 2).id
    succeed(backend, task_id, 3)
    deep = "[" * 100_000 + "]" * 100_000
    redis_client.hset(record_key(backend, task_id), "result", deep)

    assert page(operator, f"{detail_url(task_id)}raw/result/") == deep
    assert "[[[[" in page(operator, detail_url(task_id))
