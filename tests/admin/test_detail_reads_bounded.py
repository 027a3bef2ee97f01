"""A task's page reads a bounded part of its record: a big value is named with its size and
served whole on "Show all", not read and decoded on every view (docs/admin.md, Cost per page
view)."""

import json

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import record
from testproject.example.tasks import echo
from tests.admin.conftest import detail_url, page
from tests.backend_support import fail, succeed

BIG = 4 * 1024 * 1024  # characters of a big stored value: twice what a page reads


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> int:
    """A read budget of 20,000 bytes, so records of a few tens of KB exceed it."""
    monkeypatch.setattr(record, "DETAIL_READ_BYTES", 20_000)
    return 20_000


def test_a_big_result_is_named_with_its_size_and_not_read(
    operator: Client, backend: ThreadmillTaskBackend, bytes_read: list[int]
) -> None:
    """The page read the whole record: a 64 MB result was read and decoded on every view."""
    task_id = echo.enqueue("hello").id
    succeed(backend, task_id, "y" * BIG)
    bytes_read[0] = 0

    body = page(operator, detail_url(task_id))

    assert bytes_read[0] < 100_000
    assert "<td>testproject.example.tasks.echo</td>" in body
    assert '<span class="tm-state tm-state-successful">SUCCESSFUL</span>' in body
    assert "[\n  &quot;hello&quot;\n]" in body  # the arguments, read as before
    unread = f"Not read: {BIG + 2:,} bytes, more than this page reads."
    assert f'{unread} <a href="{detail_url(task_id)}raw/result/">Show all</a>' in body
    whole = operator.get(detail_url(task_id) + "raw/result/").getvalue().decode()
    assert whole == '"' + "y" * BIG + '"'


def test_a_payload_past_the_budget_is_named_and_its_arguments_served_on_request(
    operator: Client, backend: ThreadmillTaskBackend, small_budget: int
) -> None:
    task_id = echo.enqueue("a" * 30_000).id
    key = backend.broker.record_key(task_id)
    assert key is not None
    size = backend.broker.client.hstrlen(key, "payload")

    body = page(operator, detail_url(task_id))

    assert '<span class="tm-muted">(in the payload, not read)</span>' in body
    assert f"Not read: {size:,} bytes, more than this page reads." in body
    assert f'href="{detail_url(task_id)}raw/payload/">Show all</a>' in body
    args = operator.get(detail_url(task_id) + "raw/args/").content.decode()
    assert json.loads(args) == ["a" * 30_000]


def test_errors_past_the_budget_are_named_newest_read_first(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    small_budget: int,
    bytes_read: list[int],
) -> None:
    """Every attempt's error was read and parsed: 1,000 tracebacks of 64K characters each."""
    task_id = echo.enqueue("x").id
    fail(backend, task_id, ValueError("boom"))
    errors = {
        f"error:{n}": json.dumps(
            {"exception_class_path": "builtins.ValueError", "traceback": f"{n}\n" + "t" * 6_000}
        )
        for n in range(1, 13)
    }
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, mapping={**errors, "nerrors": "12"})
    size = len(errors["error:1"])
    bytes_read[0] = 0

    body = page(operator, detail_url(task_id))

    assert bytes_read[0] < small_budget + 5_000  # field names, sizes and the other reads
    assert 'id="tm-error-12">Attempt 12: builtins.ValueError</h3>' in body
    assert 'id="tm-error-10">Attempt 10: builtins.ValueError</h3>' in body
    not_read = '<span class="tm-muted">(not read)</span>'
    assert f'id="tm-error-9">Attempt 9: {not_read}</h3>' in body
    show = f'<a href="{detail_url(task_id)}raw/traceback:9/">Show all</a>'
    assert f"Not read: {size:,} bytes, more than this page reads. {show}" in body
    assert f'<td class="num">1</td><td><span class="tm-muted">not read ({size:,} bytes)' in body
    whole = operator.get(detail_url(task_id) + "raw/traceback:1/").content.decode()
    assert whole == "1\n" + "t" * 6_000


def test_another_big_field_is_named_with_its_size(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, small_budget: int
) -> None:
    """A field the page shows nowhere with a size (written by hand) is named in a note."""
    task_id = echo.enqueue("x").id
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "workers", "w" * 30_000)

    body = page(operator, detail_url(task_id))

    note = "Too big to read for this page: workers (30,000 bytes)."
    assert f'<p class="errornote" id="tm-other-unread">{note}</p>' in body
    assert "<td>testproject.example.tasks.echo</td>" in body
