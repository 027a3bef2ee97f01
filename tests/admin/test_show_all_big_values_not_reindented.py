""" "Show all" indents a value of up to INDENT_CHARS only: a longer one, up to the 64 MB it reads,
is served as stored, and the task page says so, not re-encoded with an indent on every view
(docs/admin.md, Task detail)."""

import json
import tracemalloc

import redis
from django.test import Client

from django_threadmill.admin.display import INDENT_CHARS
from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.admin.conftest import detail_url, page
from tests.backend_support import succeed


def with_result(backend: ThreadmillTaskBackend, redis_client: redis.Redis, stored: str) -> str:
    """Return the id of a SUCCESSFUL task whose stored result is ``stored``."""
    task_id = echo.enqueue("x").id
    succeed(backend, task_id, "done")
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "result", stored)
    return task_id


def zeros(chars: int) -> str:
    """Return a JSON list of zeros at most ``chars`` long, as stored: the costliest to indent."""
    return json.dumps([0] * ((chars - 1) // 2), separators=(",", ":"))


def show_all(client: Client, task_id: str, field: str = "result") -> tuple[int, str]:
    """GET the "Show all" view of ``field`` under tracemalloc; return its peak and body."""
    tracemalloc.start()
    try:
        response = client.get(f"{detail_url(task_id)}raw/{field}/")
        body = response.getvalue().decode()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200
    return peak, body


def test_a_result_of_megabytes_is_served_as_stored(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A result of 1.8 MB was decoded and indented by json's Python encoder on each view of
    "Show all", a string per number: 61 MB of memory to serve it."""
    numbers = zeros(1_800_000)
    task_id = with_result(backend, redis_client, numbers)

    peak, body = show_all(operator, task_id)

    assert peak < 8 * len(numbers)  # the reply, its text, the chunks sent: no indenting
    assert body == numbers
    shown = page(operator, detail_url(task_id))
    assert (
        f'<a href="{detail_url(task_id)}raw/result/">Show all</a> (as stored: it indents a '
        f"value of up to {INDENT_CHARS} characters)</p>" in shown
    )


def test_a_result_up_to_the_limit_is_served_indented(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    numbers = zeros(INDENT_CHARS)
    assert len(numbers) <= INDENT_CHARS
    task_id = with_result(backend, redis_client, numbers)

    _, body = show_all(operator, task_id)

    assert body.startswith("[\n  0,\n  0,\n")
    assert json.loads(body) == json.loads(numbers)
    assert "(as stored: it indents" not in page(operator, detail_url(task_id))


def test_big_arguments_are_served_on_one_line(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """args were indented up to a payload of 2 MB the same way."""
    task_id = echo.enqueue([0] * 500_000).id

    peak, body = show_all(operator, task_id, "args")

    assert body == json.dumps([[0] * 500_000])
    assert peak < 20 * len(body)  # the payload, its decoded list and one line of it
    assert "(as stored: it indents" in page(operator, detail_url(task_id))
