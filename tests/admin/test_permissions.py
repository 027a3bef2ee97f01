"""The admin's own permissions: view lets staff look, change lets them act; CSRF guards posts."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import (
    QUEUES_URL,
    TASKS_URL,
    detail_url,
    failed_task,
    logged_in,
    staff_user,
)

ACTION_URL = TASKS_URL + "action/"
PURGE_URL = QUEUES_URL + "default/default/purge/"


def test_anonymous_users_are_sent_to_log_in(client: Client, db: None) -> None:
    response = client.get(QUEUES_URL)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_staff_without_permissions_see_nothing(db: None, backend: ThreadmillTaskBackend) -> None:
    client = logged_in(staff_user("nobody"))
    task_id = failed_task(backend)

    for url in (QUEUES_URL, TASKS_URL, detail_url(task_id), detail_url(task_id) + "raw/args/"):
        assert client.get(url).status_code == 403
    assert "Threadmill" not in client.get("/admin/").content.decode()


def test_viewer_sees_pages_but_no_action_controls(
    viewer: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = failed_task(backend)
    add.enqueue(1, 1)

    queues = viewer.get(QUEUES_URL).content.decode()
    listing = viewer.get(TASKS_URL).content.decode()
    detail = viewer.get(detail_url(failed)).content.decode()

    assert "Purge finished" not in queues
    assert 'name="action"' not in listing
    assert 'name="_selected_action"' not in listing
    assert "Requeue" not in detail
    assert failed in listing


def test_viewer_cannot_act_even_by_posting(viewer: Client, backend: ThreadmillTaskBackend) -> None:
    task_id = failed_task(backend)
    data = {"action": "requeue", "_selected_action": f"default:{task_id}", "post": "yes"}

    assert viewer.post(ACTION_URL, data).status_code == 403
    assert viewer.post(PURGE_URL, {"post": "yes"}).status_code == 403
    assert viewer.get(PURGE_URL).status_code == 403
    assert backend.get_result(task_id).status == "FAILED"


def test_operator_sees_the_action_controls(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = failed_task(backend)

    assert "Purge finished" in operator.get(QUEUES_URL).content.decode()
    assert 'name="action"' in operator.get(TASKS_URL).content.decode()
    assert 'id="tm-requeue"' in operator.get(detail_url(failed)).content.decode()


@pytest.mark.parametrize("url", [ACTION_URL, PURGE_URL])
def test_posts_without_a_csrf_token_are_refused(
    url: str, backend: ThreadmillTaskBackend, db: None
) -> None:
    user = User.objects.create_superuser("root", password="pw")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    task_id = failed_task(backend)

    response = client.post(
        url, {"action": "requeue", "_selected_action": f"default:{task_id}", "post": "yes"}
    )

    assert response.status_code == 403
    assert backend.get_result(task_id).status == "FAILED"
