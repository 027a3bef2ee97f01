"""Actions on every task a filter matches: confirmed with the count, fenced task by task."""

from django.contrib.messages import get_messages
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import fail, send_welcome
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
