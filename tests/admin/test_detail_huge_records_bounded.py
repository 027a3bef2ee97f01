"""A task's page and its "Show all" stay bounded on a record no task of ours writes: millions
of fields, or a value past what "Show all" reads; a long value is sent as stored, in chunks
(docs/admin.md, Task detail)."""

import json
import tracemalloc

import redis
from django.contrib.messages import get_messages
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import SHOW_ALL_BYTES
from django_threadmill.broker.inspect.record import MAX_RECORD_FIELDS
from testproject.example.tasks import echo
from tests.admin.conftest import detail_url, failed_task, page
from tests.backend_support import succeed

JUNK_FIELDS = 20_000  # fields written by hand into one record: past MAX_RECORD_FIELDS
NAME_CHARS = 100  # characters of each junk field's name: HKEYS of them all reads 2 MB


def record_key(backend: ThreadmillTaskBackend, task_id: str) -> str:
    key = backend.broker.record_key(task_id)
    assert key is not None
    return key


def test_a_record_with_more_fields_than_a_task_has_is_read_by_our_field_names(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    bytes_read: list[int],
) -> None:
    """HKEYS read every field name, and the page every small value: a record given millions of
    fields by hand was read whole on each view."""
    task_id = failed_task(backend, "boom")
    key = record_key(backend, task_id)
    ours = redis_client.hlen(key)
    junk = {f"{n:0{NAME_CHARS}d}": "x" for n in range(JUNK_FIELDS)}
    redis_client.hset(key, mapping=junk)
    assert JUNK_FIELDS > MAX_RECORD_FIELDS
    bytes_read[0] = 0

    body = page(operator, detail_url(task_id))

    assert bytes_read[0] < 100_000
    assert '<span class="tm-state tm-state-failed">FAILED</span>' in body
    assert 'id="tm-error-1">Attempt 1: builtins.ValueError</h3>' in body
    note = (
        f"Record &#x27;{key}&#x27; holds {ours + JUNK_FIELDS:,} fields, more than a task&#x27;s "
        f"record has ({MAX_RECORD_FIELDS:,} at most), so something other than django-threadmill "
        f"wrote them. This page read the {ours:,} fields django-threadmill writes, by name, and "
        f"left out the other {JUNK_FIELDS:,}."
    )
    assert f'<p class="errornote" id="tm-fields-left-out">{note} Look at them' in body
    traceback = operator.get(detail_url(task_id) + "raw/traceback:1/").content.decode()
    assert "ValueError: boom" in traceback


def test_show_all_refuses_a_value_past_what_it_reads_unread_and_says_where_to_read_it(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    bytes_read: list[int],
) -> None:
    """ "Show all" read a value whole whatever its size: a result of hundreds of MB written by
    hand (or under a raised max_result_bytes) was read, copied and indented in the web process."""
    task_id = echo.enqueue("x").id
    succeed(backend, task_id, "done")
    key = record_key(backend, task_id)
    size = SHOW_ALL_BYTES + 1
    redis_client.hset(key, "result", b"7" * size)
    bytes_read[0] = 0

    response = operator.get(detail_url(task_id) + "raw/result/")

    assert bytes_read[0] < 100_000
    assert response.status_code == 302
    assert response["Location"] == detail_url(task_id)
    where = f"redis-cli --raw HGET {key!r} 'result'"
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == (
        f"Task {task_id!r} stores result of {size:,} bytes, so it was not read. That is more "
        f"than Show all reads ({SHOW_ALL_BYTES:,} bytes): read it with {where}."
    )
    body = page(operator, detail_url(task_id))
    assert f"Not read: {size:,} bytes, more than this page reads. That is more than" in body
    assert f'href="{detail_url(task_id)}raw/result/"' not in body


def test_show_all_sends_a_long_value_as_stored_in_chunks(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A long JSON value was indented by json's Python encoder, a string per number: hundreds
    of MB for a result of 8 MB, then copied whole twice more to escape and encode it."""
    task_id = echo.enqueue("x").id
    numbers = json.dumps([0] * (4 * 1024 * 1024), separators=(",", ":"))  # 8 MB
    succeed(backend, task_id, "done")
    redis_client.hset(record_key(backend, task_id), "result", numbers)

    tracemalloc.start()
    try:
        response = operator.get(detail_url(task_id) + "raw/result/")
        sent = response.getvalue()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 6 * len(numbers)  # the reply, its text and what was sent: no indenting
    assert response.streaming
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert sent.decode() == numbers
