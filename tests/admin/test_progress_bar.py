"""The task list and the task detail show a task's last progress report: a bar once its total
is known, done / total and the percent, the note (escaped), when it was written."""

import pytest
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome, ProgressReport
from testproject.example.tasks import add
from tests.admin.conftest import TASKS_URL, detail_url, page
from tests.backend_support import finish, start


def reporting_task(
    backend: ThreadmillTaskBackend, done: float, total: float | None, note: str = ""
) -> str:
    """Start an ``add`` task and write one progress report of it; return its id."""
    task_id = add.enqueue(1, 2).id
    lease = start(backend, task_id)
    report = ProgressReport(lease=lease, done=done, total=total, note=note)
    assert backend.broker.send_progress([report]) == 1
    return task_id


def test_a_running_task_shows_its_bar_in_the_list_and_on_its_page(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = reporting_task(backend, 3, 10, "rows <b>imported</b>")

    listed = page(operator, TASKS_URL)
    assert '<progress value="3" max="10"></progress> 3 / 10 (30%)</span>' in listed
    assert "rows &lt;b&gt;imported&lt;/b&gt;" in listed
    assert "<th>Progress</th>" in listed
    detail = page(operator, detail_url(task_id))
    assert '<td id="tm-progress">' in detail
    assert '<progress value="3" max="10"></progress> 3 / 10 (30%)</span>' in detail
    assert '<span class="tm-progress-note">rows &lt;b&gt;imported&lt;/b&gt;</span>' in detail
    assert "reported 20" in detail


def test_without_a_total_there_is_no_bar_only_the_count(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = reporting_task(backend, 7, None, "counting")

    detail = page(operator, detail_url(task_id))
    assert "<progress" not in detail
    assert '<span class="tm-progress-count">7</span>' in detail
    assert "counting" in detail


def test_a_finished_task_keeps_its_last_report(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 2).id
    lease = start(backend, task_id)
    backend.broker.send_progress([ProgressReport(lease=lease, done=9, total=9, note="all")])
    finish(backend, lease, Outcome.SUCCESSFUL, "3")

    assert '<progress value="9" max="9"></progress>' in page(operator, detail_url(task_id))
    assert "9 / 9 (100%)" in page(operator, f"{TASKS_URL}?status=successful")


def test_a_task_that_reports_nothing_shows_no_progress(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 2).id

    assert '<span class="tm-progress">' not in page(operator, detail_url(task_id))
    assert "<th>Progress</th>" not in page(operator, detail_url(task_id))
    assert '<span class="tm-progress">' not in page(operator, TASKS_URL)


@pytest.mark.usefixtures("backend")
@override_settings(LANGUAGE_CODE="de")
def test_the_bar_reads_numbers_whatever_the_language(operator: Client) -> None:
    reporting_task(add.get_backend(), 2.5, 10)  # type: ignore[arg-type]

    listed = page(operator, TASKS_URL)
    assert '<progress value="2.5" max="10"></progress>' in listed
    assert "2,5 / 10 (25%)" in listed
