"""Requeue and cancel from the admin: confirmed first, fenced, and honest about what changed."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, step
from testproject.example.tasks import add
from tests.admin.conftest import ACTION_URL, TASKS_URL, act, failed_task, selection, successful_task


def form(action: str, *task_ids: str) -> dict[str, object]:
    return {"action": action, "_selected_action": selection(*task_ids), "next": TASKS_URL}


def status(backend: ThreadmillTaskBackend, task_id: str) -> TaskResultStatus:
    return backend.get_result(task_id).status


def test_requeue_asks_for_confirmation_first(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = failed_task(backend)

    response = operator.post(ACTION_URL, form("requeue", task_id))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Requeue selected FAILED tasks" in page
    assert f"<td>{task_id}</td><td>FAILED</td>" in page
    assert 'name="post" value="yes"' in page
    assert status(backend, task_id) == TaskResultStatus.FAILED


def test_requeue_counts_what_it_changed_and_what_it_left(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = [failed_task(backend), failed_task(backend)]
    done = successful_task(backend)

    messages = act(operator, "requeue", *failed, done)

    assert messages == [
        "2 tasks requeued.",
        f"1 left alone: the task is SUCCESSFUL now, not FAILED (it changed meanwhile, or was "
        f"never so): {done}.",
    ]
    assert [status(backend, t) for t in failed] == [TaskResultStatus.READY] * 2


def test_a_task_requeued_meanwhile_is_left_alone(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = failed_task(backend)
    confirmation = operator.post(ACTION_URL, form("requeue", task_id)).content.decode()
    assert f"<td>{task_id}</td><td>FAILED</td>" in confirmation
    backend.requeue(task_id)  # someone else was quicker

    messages = act(operator, "requeue", task_id)

    assert messages[0] == "0 tasks requeued."
    assert "the task is READY now, not FAILED" in messages[1]


def test_cancel_fails_ready_and_delayed_tasks_with_the_user_named(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    ready = add.enqueue(1, 1).id
    delayed = add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(2, 2).id

    messages = act(operator, "cancel", ready, delayed)

    assert messages == ["2 tasks cancelled."]
    result = backend.get_result(ready)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "django_threadmill.exceptions.Cancelled"
    assert "cancelled by operator in the admin" in result.errors[0].traceback
    assert status(backend, delayed) == TaskResultStatus.FAILED


def test_a_purged_task_is_reported_gone(operator: Client, backend: ThreadmillTaskBackend) -> None:
    task_id = failed_task(backend)
    backend.purge_finished("default")

    messages = act(operator, "requeue", task_id)

    assert messages[1] == f"1 left alone: no such task any more (expired or purged): {task_id}."


@pytest.mark.parametrize(("action", "selects"), [("requeue", False), ("explode", True)])
def test_nothing_selected_or_no_action_warns(
    operator: Client, backend: ThreadmillTaskBackend, action: str, selects: bool
) -> None:
    task_ids = [failed_task(backend)] if selects else []

    assert act(operator, action, *task_ids) == [
        "Choose an action and select at least one task first."
    ]


def test_next_pointing_elsewhere_is_ignored(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    data = {
        "action": "requeue",
        "_selected_action": selection(failed_task(backend)),
        "next": "https://evil.example.com/",
        "post": "yes",
    }

    assert operator.post(ACTION_URL, data)["Location"] == TASKS_URL


@pytest.mark.parametrize("method", ["get", "head"])
def test_actions_only_accept_post(operator: Client, method: str) -> None:
    assert getattr(operator, method)(ACTION_URL).status_code == 405


def test_a_step_of_a_cancelled_workflow_is_left_alone_and_says_why(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """It said "1 task requeued.", and the worker recorded the step FAILED again before it
    started, as a step of a cancelled workflow."""
    flow = chain(step(add, 1, 1), step(add, 2)).enqueue()
    first = flow.results[0]
    assert first is not None
    assert flow.cancel("not needed")

    messages = act(operator, "requeue", first.id)

    assert messages == [
        "0 tasks requeued.",
        "1 left alone: a cancelled workflow's step, which no worker starts, so a requeue would "
        "only fail it again; enqueue the task anew to run it (docs/workflows.md, Cancel): "
        f"{first.id}.",
    ]
    assert status(backend, first.id) == TaskResultStatus.FAILED
    assert drain() == 0
