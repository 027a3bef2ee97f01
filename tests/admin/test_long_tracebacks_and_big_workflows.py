"""What a staff user meets on real data: long tracebacks, a task that failed 1,000 times, a
workflow of thousands of steps. Every page stays readable and of bounded size."""

import json

import pytest
import redis
from django.test import Client

from django_threadmill.admin import workflows
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.results import error_json
from django_threadmill.retry import MAX_ATTEMPTS
from django_threadmill.workflows import group, step
from testproject.example.tasks import add
from tests.admin.conftest import TASKS_URL, detail_url, page
from tests.backend_support import fail, start
from tests.workflows.tasks import collect, number

MESSAGE = "<b>quota exceeded</b> for account 42"
WORKFLOWS_URL = f"{TASKS_URL}workflows/"


def ping(n: int) -> None:
    if n == 0:
        raise ValueError(MESSAGE)
    pong(n - 1)


def pong(n: int) -> None:
    ping(n)


def deep_error() -> ValueError:
    """A ValueError raised 800 frames deep: a traceback of some 1,600 lines."""
    try:
        ping(400)
    except ValueError as exc:
        return exc
    raise AssertionError("ping did not raise")


def test_a_long_traceback_shows_its_end_where_the_exception_and_message_are(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """The page showed the first 2,000 characters: frames only, never the message."""
    task_id = add.enqueue(1, 2).id
    fail(backend, task_id, deep_error())

    body = page(operator, detail_url(task_id))

    assert "ValueError: &lt;b&gt;quota exceeded&lt;/b&gt; for account 42\n</pre>" in body
    assert "<b>quota" not in body
    assert "Showing the last 2000 of " in body
    full = page(operator, detail_url(task_id) + "raw/traceback:1/")
    assert full.startswith("Traceback (most recent call last):")
    assert full.endswith(f"ValueError: {MESSAGE}\n")


def test_a_task_that_failed_a_thousand_times_shows_the_last_tracebacks_and_lists_the_rest(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Every attempt's traceback was on the page: 1,000 of them made it 3 MB."""
    task_id = add.enqueue(1, 2).id
    fail(backend, task_id, deep_error())
    stored = json.loads(error_json(deep_error()))
    errors = {
        f"error:{n}": json.dumps({**stored, "traceback": f"attempt {n}\n{stored['traceback']}"})
        for n in range(1, MAX_ATTEMPTS + 1)
    }
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, mapping={**errors, "nerrors": str(MAX_ATTEMPTS)})

    body = page(operator, detail_url(task_id))

    assert len(body) < 300_000
    assert body.count("ValueError: &lt;b&gt;quota exceeded") == 10
    assert 'id="tm-error-991">Attempt 991: builtins.ValueError</h3>' in body
    assert 'id="tm-error-990"' not in body
    assert "Attempts 1 to 990: the exception of each, with a link to its traceback" in body
    first = f"{detail_url(task_id)}raw/traceback:1/"
    assert '<td class="num">990</td><td>builtins.ValueError</td>' in body
    # 68 MB of errors: those past the page's read budget are named with their size, linked.
    size = len(errors["error:1"].encode())  # the traceback's length varies with the versions
    unread = f'<span class="tm-muted">not read ({size:,} bytes)</span>'
    assert f'<td class="num">1</td><td>{unread}</td><td><a href="{first}">' in body
    assert page(operator, first).startswith("attempt 1\nTraceback")


def test_a_few_errors_show_every_traceback(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 2).id
    fail(backend, task_id, ValueError("<i>short</i>"))

    body = page(operator, detail_url(task_id))

    assert 'id="tm-earlier-errors"' not in body
    assert "ValueError: &lt;i&gt;short&lt;/i&gt;\n</pre>" in body
    assert "Showing the last" not in body


@pytest.fixture
def five_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflows, "STEPS_PER_PAGE", 5)


def test_a_big_workflow_is_shown_a_page_of_steps_at_a_time(
    operator: Client, backend: ThreadmillTaskBackend, five_a_page: None
) -> None:
    """Every step was on one page: a group of 10,000 rendered 3.5 MB in 2 s per view."""
    flow = group(*[step(number, n) for n in range(12)], then=step(collect)).enqueue()
    start(backend, flow.steps[0].task_id)
    url = f"{WORKFLOWS_URL}default/{flow.id}/"

    first = page(operator, url)
    last = page(operator, f"{url}?page=3")

    assert "Steps 0 to 4; 13 in all, numbered from 0." in first
    assert first.count('<td class="num">') == 5
    assert f"{TASKS_URL}default/{flow.steps[5].task_id}/" not in first
    assert 'href="?page=2" id="tm-steps-next"' in first
    assert "Steps 10 to 12; 13 in all, numbered from 0." in last
    assert last.count('<td class="num">') == 3
    assert 'href="?page=2" id="tm-steps-previous"' in last
    assert 'id="tm-steps-next"' not in last
    # Step 0 runs on the first page only; the last reads the workflow as running all the same.
    assert '<span class="tm-muted">(RUNNING)</span>' in last
    assert "the list of 12 values: [step 0, step 1, step 2, step 3, step 4, … 7 more]" in last
    assert "Steps 0 to 4;" in page(operator, f"{url}?page=nope")  # as Django's paginator reads
    assert "Steps 10 to 12;" in page(operator, f"{url}?page=99")


def test_a_workflow_whose_steps_have_not_started_reads_ready_on_every_page(
    operator: Client, backend: ThreadmillTaskBackend, five_a_page: None
) -> None:
    flow = group(*[step(number, n) for n in range(7)]).enqueue()

    for n in (1, 2):
        body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/?page={n}")
        assert '<span class="tm-muted">(READY)</span>' in body


def test_a_small_workflow_has_no_pages(operator: Client, backend: ThreadmillTaskBackend) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()

    body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/")

    assert 'id="tm-steps-shown"' not in body
    assert "Page 1 of" not in body
