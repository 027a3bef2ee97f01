"""Edges of the admin an operator meets: an action on the "All states" list with a backlog in
front of what it changes, and the charts in a language that writes a decimal comma."""

import re

import pytest
from django.contrib.messages import get_messages
from django.test import Client, override_settings

from django_threadmill.admin import bulk
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, TASKS_URL, failed_task, page, successful_task
from tests.admin.test_activity import finish_add

ACTION_URL = TASKS_URL + "action/"
BUDGET = 3  # index entries one action reads, for these tests
SVG_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def summary(html: str) -> str:
    """Return the bulk confirmation's count sentence, its whitespace collapsed."""
    found = re.search(r'<p id="tm-bulk-summary">(.*?)</p>', html, re.S)
    assert found is not None, html
    return " ".join(re.sub(r"<[^>]+>", "", found[1]).split())


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "BULK_SCAN_BUDGET", BUDGET)


def test_requeue_on_every_state_reads_past_a_backlog_of_waiting_tasks(
    operator: Client, backend: ThreadmillTaskBackend, small_budget: None
) -> None:
    """The list opens on every state, waiting tasks before results: an action on it read the
    READY backlog first, spent its read limit there, and requeued nothing ("0 tasks (at
    least: … narrow the filter)") while a FAILED task was in the queue."""
    failed = failed_task(backend)
    for n in range(BUDGET):
        add.enqueue(1, n)
    data = {"action": "requeue", "across": "1", "queue": "default", "next": TASKS_URL}

    confirm = operator.post(ACTION_URL, data)

    assert confirm.status_code == 200
    assert summary(confirm.content.decode()) == (
        "1 task is FAILED now and matches queue default, status All states."
    )
    done = operator.post(ACTION_URL, {**data, "post": "yes"})
    assert [str(m) for m in get_messages(done.wsgi_request)] == ["1 task requeued."]
    assert backend.get_result(failed).status == TaskResultStatus.READY


def test_cancel_on_every_state_is_not_told_at_least_for_the_finished_results(
    operator: Client, backend: ThreadmillTaskBackend, small_budget: None
) -> None:
    """After the waiting tasks, the walk read on into the results, which no cancel changes,
    and the page said the READY task found was "at least" what matched."""
    for _ in range(BUDGET):
        successful_task(backend)
    ready = add.enqueue(1, 2).id

    confirm = operator.post(ACTION_URL, {"action": "cancel", "across": "1", "next": TASKS_URL})

    assert (
        summary(confirm.content.decode())
        == "1 task is READY or delayed now and matches status All states."
    )
    assert backend.get_result(ready).status == TaskResultStatus.READY


@override_settings(LANGUAGE_CODE="de")
def test_chart_geometry_is_not_localized(operator: Client, backend: ThreadmillTaskBackend) -> None:
    """German writes 354,0: x="354,0" is no SVG length, and the browser drew no bar."""
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    finish_add(backend, Outcome.FAILED, run_ms=3)

    html = page(operator, QUEUES_URL)

    rects = re.findall(r"<rect ([^>]*)/>", html)
    assert rects  # a failed and a successful bar, in one minute or two
    geometry = [
        value for rect in rects for value in re.findall(r'(?:x|y|width|height)="([^"]*)"', rect)
    ]
    assert len(geometry) == 4 * len(rects)
    assert all(SVG_NUMBER.fullmatch(value) for value in geometry), geometry
    assert "1 successful, 1 failed (50,0% failed)" in html  # the text is still German
