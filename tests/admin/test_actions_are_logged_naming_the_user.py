"""Each admin action that changes data leaves one INFO line naming who did what, and to what."""

import logging

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add
from tests.admin.conftest import (
    QUEUES_URL,
    TASKS_URL,
    detail_url,
    failed_task,
    successful_task,
)

ACTION_URL = TASKS_URL + "action/"
LOGGER = "django_threadmill.admin.audit"


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


def confirmed(client: Client, url: str, data: dict[str, object]) -> None:
    """Post ``data`` to ``url`` as its confirmation page does, and check it redirected."""
    response = client.post(url, {**data, "post": "yes"})
    assert response.status_code == 302, response.content.decode()


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=LOGGER)
    return caplog


def test_a_requeue_from_the_task_page_names_the_task(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = failed_task(backend)
    form = {"action": "requeue", "_selected_action": f"default:{task_id}"}
    form["next"] = detail_url(task_id)
    assert 'id="tm-requeue"' in operator.get(detail_url(task_id)).content.decode()

    assert operator.post(ACTION_URL, form).status_code == 200  # the confirmation page
    assert logged(caplog) == []
    confirmed(operator, ACTION_URL, form)

    assert backend.get_result(task_id).status == TaskResultStatus.READY
    assert logged(caplog) == [
        f"Admin requeue backend=default task={task_id} changed=1 left_alone=0 "
        "by=operator in the admin"
    ]


def test_a_cancel_of_selected_rows_counts_them(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    done = successful_task(backend)  # first: it is acquired as the queue's only READY task
    ready = [add.enqueue(1, 1).id, add.enqueue(2, 2).id]
    selected = [f"default:{task_id}" for task_id in [*ready, done]]

    confirmed(
        operator, ACTION_URL, {"action": "cancel", "_selected_action": selected, "next": TASKS_URL}
    )

    assert logged(caplog) == [
        "Admin cancel backend=default selected=3 changed=2 left_alone=1 by=operator in the admin"
    ]


def test_an_action_on_a_whole_filter_names_the_filter(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        failed_task(backend)
    query = {"queue": "default", "status": "failed", "task": "example.tasks.add"}

    confirmed(operator, ACTION_URL, {"action": "requeue", "across": "1", **query})
    confirmed(operator, ACTION_URL, {"action": "requeue", "across": "1"})  # nothing filtered

    assert logged(caplog) == [
        "Admin requeue backend=default filter=queue=default&status=failed&task=example.tasks.add "
        "changed=3 left_alone=0 by=operator in the admin",
        "Admin requeue backend=default filter=all changed=0 left_alone=0 by=operator in the admin",
    ]


def test_a_purge_names_the_queue_the_state_and_what_it_deleted(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    failed_task(backend)
    failed_task(backend)
    successful_task(backend)

    confirmed(operator, QUEUES_URL + "default/default/purge/", {"state": "failed"})
    confirmed(operator, QUEUES_URL + "default/default/purge/", {"state": ""})

    assert logged(caplog) == [
        "Admin purge backend=default queue=default state=failed deleted=2 by=operator in the admin",
        "Admin purge backend=default queue=default state=finished deleted=1 "
        "by=operator in the admin",
    ]


def test_a_task_id_posted_with_a_line_break_stays_on_one_line(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    forged = "x@default\nAdmin purge backend=default by=someone else"

    confirmed(
        operator,
        ACTION_URL,
        {"action": "cancel", "_selected_action": f"default:{forged}", "next": TASKS_URL},
    )

    assert logged(caplog) == [
        "Admin cancel backend=default task=x@default\\x0aAdmin purge backend=default by=someone "
        "else changed=0 left_alone=1 by=operator in the admin"
    ]
