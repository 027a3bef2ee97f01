"""A task's page indents a short JSON value only: a longer one, up to the 2 MB the page reads,
is shown as stored, its start with a note and "Show all", not re-encoded with an indent on
every view (docs/admin.md, Task detail)."""

import json
import tracemalloc

import redis
from django.test import Client

from django_threadmill.admin.display import PAGE_INDENT_CHARS, PREVIEW_CHARS
from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.admin.conftest import detail_url, page
from tests.backend_support import succeed

ZEROS = 200_000  # numbers in a big value: 400 KB of JSON, past what the page indents


def peak_of_view(client: Client, url: str) -> tuple[int, str]:
    """GET ``url`` under tracemalloc; return its peak of memory and its body."""
    tracemalloc.start()
    try:
        body = page(client, url)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, body


def note(length: int) -> str:
    return (
        f"Showing {PREVIEW_CHARS} of {length} characters, not indented: this page indents a value "
        f"of up to {PAGE_INDENT_CHARS} characters."
    )


def test_a_big_result_is_shown_as_stored_and_served_whole(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A result of 400 KB was decoded and indented by json's Python encoder, a string per
    number, to show its first 2,000 characters (63 MB of memory per view for 1.8 MB)."""
    task_id = echo.enqueue("x").id
    succeed(backend, task_id, "done")
    numbers = json.dumps([0] * ZEROS, separators=(",", ":"))
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "result", numbers)

    peak, body = peak_of_view(operator, detail_url(task_id))

    assert peak < 6 * len(numbers)  # the reply, its text and the page: no indenting
    assert f'<pre class="tm-value">{numbers[:PREVIEW_CHARS]}</pre>' in body
    show_all = f'<a href="{detail_url(task_id)}raw/result/">Show all</a>'
    assert f"{note(len(numbers))}\n{show_all}" in body
    whole = operator.get(detail_url(task_id) + "raw/result/").getvalue().decode()
    assert json.loads(whole) == [0] * ZEROS


def test_big_arguments_are_shown_on_one_line(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """The arguments of a payload of 400 KB were indented the same way (66 MB per view for
    1.8 MB)."""
    task_id = echo.enqueue([0] * ZEROS).id
    key = backend.broker.record_key(task_id)
    assert key is not None
    stored = backend.broker.client.hstrlen(key, "payload")
    assert PAGE_INDENT_CHARS < stored < 2 * 1024 * 1024

    peak, body = peak_of_view(operator, detail_url(task_id))

    assert peak < 10 * stored  # the payload, its decoded list and one line of it
    args = json.dumps([[0] * ZEROS], ensure_ascii=False)
    assert f'<pre class="tm-value">{args[:PREVIEW_CHARS]}</pre>' in body
    assert note(len(args)) in body
    assert "<td>testproject.example.tasks.echo</td>" in body


def test_a_value_up_to_the_limit_is_indented(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = echo.enqueue({"to": "ada"}).id
    succeed(backend, task_id, "done")
    numbers = json.dumps([0] * ((PAGE_INDENT_CHARS - 2) // 3), separators=(", ", ":"))
    assert len(numbers) <= PAGE_INDENT_CHARS
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "result", numbers)

    body = page(operator, detail_url(task_id))

    assert '<pre class="tm-value">[\n  0,\n  0,\n' in body
    assert "[\n  {\n    &quot;to&quot;: &quot;ada&quot;\n  }\n]" in body
    assert "not indented: this page indents" not in body
