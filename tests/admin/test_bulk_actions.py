"""Actions on every task a filter matches: confirmed with the count, fenced task by task."""

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from testproject.example.tasks import add, fail, send_welcome
from tests.admin.conftest import TASKS_URL, failed_task, successful_task
from tests.backend_support import fail as record_failure

ACTION_URL = TASKS_URL + "action/"
FILTER = {"queue": "default", "status": "failed", "task": "example.tasks.add"}


def across(action: str, **extra: str) -> dict[str, str]:
    return {"action": action, "across": "1", "next": TASKS_URL, **FILTER, **extra}


def status(backend: ThreadmillTaskBackend, task_id: str) -> TaskResultStatus:
    return backend.get_result(task_id).status


def test_requeue_every_failed_task_of_a_filter(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    matching = [failed_task(backend) for _ in range(3)]
    other_path = fail.enqueue("x").id
    record_failure(backend, other_path, ValueError("x"))
    other_queue = send_welcome.enqueue("a@example.com").id
    record_failure(backend, other_queue, ValueError("y"))
    untouched = [other_path, other_queue, successful_task(backend)]

    confirm = operator.post(ACTION_URL, across("requeue"))

    page = confirm.content.decode()
    assert confirm.status_code == 200
    assert "<strong>3 tasks</strong>" in page
    assert "Requeue every FAILED task a filter matches" in page
    assert (
        "are FAILED now and match queue default, status FAILED, task path containing "
        "“example.tasks.add”." in page
    )
    assert 'value="Yes, requeue 3 tasks"' in page
    assert all(status(backend, task_id) == TaskResultStatus.FAILED for task_id in matching)

    done = operator.post(ACTION_URL, across("requeue", post="yes"))

    assert done.status_code == 302
    assert [str(m) for m in get_messages(done.wsgi_request)] == ["3 tasks requeued."]
    assert all(status(backend, task_id) == TaskResultStatus.READY for task_id in matching)
    assert [status(backend, task_id) for task_id in untouched] == [
        TaskResultStatus.FAILED,
        TaskResultStatus.FAILED,
        TaskResultStatus.SUCCESSFUL,
    ]


def test_a_filter_with_nothing_to_change_says_so(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    successful_task(backend)
    page = operator.post(ACTION_URL, across("requeue")).content.decode()
    assert "<strong>0 tasks</strong>" in page
    assert 'name="post"' not in page


def test_the_list_offers_the_filter_to_the_action_form(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed_task(backend)
    page = operator.get(TASKS_URL, FILTER).content.decode()
    assert 'id="tm-across"' in page
    for name, value in FILTER.items():
        assert f'<input type="hidden" name="{name}" value="{value}">' in page


def test_a_viewer_cannot_act_on_a_filter(viewer: Client, backend: ThreadmillTaskBackend) -> None:
    task_id = failed_task(backend)
    assert viewer.post(ACTION_URL, across("requeue", post="yes")).status_code == 403
    assert status(backend, task_id) == TaskResultStatus.FAILED


UNSENT = {
    "an unknown backend": (
        {"backend": "nope"},
        "backend “nope” is not a ThreadmillTaskBackend alias in TASKS (default, bulk).",
    ),
    "a backend of another kind": (
        {"backend": "dummy"},
        "backend “dummy” is not a ThreadmillTaskBackend alias in TASKS (default, bulk).",
    ),
    "a status in capitals": (
        {"status": "FAILED"},
        "status “FAILED” is none the list's filter offers (finished, successful, failed, ready, "
        "delayed, running, or nothing for all states).",
    ),
}


@pytest.mark.parametrize("post", ["", "yes"], ids=["confirmation", "confirmed"])
@pytest.mark.parametrize(("sent", "problem"), UNSENT.values(), ids=UNSENT.keys())
def test_a_filter_value_the_form_never_sends_is_refused(
    operator: Client,
    two_aliases: None,
    backend: ThreadmillTaskBackend,
    sent: dict[str, str],
    problem: str,
    post: str,
) -> None:
    """Read as no filter, "backend nope" requeued every backend's FAILED tasks, while the
    confirmation said "match backend nope"."""
    bulk = task_backends["bulk"]
    elsewhere = add.using(backend="bulk", queue_name="bulk-in").enqueue(1, 2).id
    record_failure(bulk, elsewhere, ValueError("x"))
    here = failed_task(backend)
    form = {"action": "requeue", "across": "1", "next": TASKS_URL, "status": "failed"}

    response = operator.post(ACTION_URL, {**form, **sent, "post": post})

    assert response.status_code == 302
    assert response["Location"] == TASKS_URL
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"Nothing was requeued: {problem} Choose the {next(iter(sent))} in the list's filter "
        "and try again."
    ]
    assert status(backend, here) == TaskResultStatus.FAILED
    assert status(bulk, elsewhere) == TaskResultStatus.FAILED


def test_the_list_itself_shows_everything_for_an_unknown_filter_value(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """A link may be old or edited: only an action refuses what the form never sends."""
    task_id = failed_task(backend)
    response = operator.get(TASKS_URL, {"backend": "nope", "status": "FAILED"})
    assert response.status_code == 200
    assert task_id in response.content.decode()
