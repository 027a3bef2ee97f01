"""What the admin's task actions tell an operator when they refuse: a task out of attempts,
a selection larger than one action takes."""

import pytest
from django.test import Client

from django_threadmill.admin.actions import MAX_SELECTION
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.retry import MAX_ATTEMPTS
from testproject.example.tasks import add
from tests.admin.conftest import detail_url, failed_task, page, post_action


@pytest.fixture
def out_of_attempts(backend: ThreadmillTaskBackend) -> str:
    """A FAILED task that ran its MAX_ATTEMPTS attempts: each cancelled, then requeued."""
    task_id = add.enqueue(1, 2).id
    assert backend.cancel(task_id)
    for _ in range(MAX_ATTEMPTS - 1):
        assert backend.requeue(task_id)
        assert backend.cancel(task_id)
    return task_id


def test_a_requeue_of_a_task_out_of_attempts_says_why_it_was_left_alone(
    operator: Client, backend: ThreadmillTaskBackend, out_of_attempts: str
) -> None:
    other = failed_task(backend)

    messages = post_action(
        operator,
        {
            "action": "requeue",
            "_selected_action": [f"default:{out_of_attempts}", f"default:{other}"],
        },
    )

    assert messages == [
        "1 task requeued.",
        "1 left alone: FAILED after 1,000 attempts, the most a task runs, so a requeue would "
        "not run it again; enqueue the task anew to run it (docs/lifecycle.md, Retries): "
        f"{out_of_attempts}.",
    ]
    assert backend.get_result(out_of_attempts).status == TaskResultStatus.FAILED


def test_a_bulk_requeue_reports_the_tasks_out_of_attempts(
    operator: Client, backend: ThreadmillTaskBackend, out_of_attempts: str
) -> None:
    messages = post_action(operator, {"action": "requeue", "across": "1", "status": "failed"})

    assert messages[0] == "0 tasks requeued."
    assert messages[1].startswith("1 left alone: FAILED after 1,000 attempts")


def test_the_page_of_a_task_out_of_attempts_offers_no_requeue(
    operator: Client, out_of_attempts: str
) -> None:
    body = page(operator, detail_url(out_of_attempts))

    assert 'id="tm-requeue"' not in body
    assert (
        '<span class="tm-muted" id="tm-exhausted">after its 1,000 attempts, the most a task '
        "runs, so it is not requeued: enqueue the task anew to run it (docs/lifecycle.md, "
        "Retries)</span>"
    ) in body


def test_a_failed_task_with_attempts_left_still_offers_a_requeue(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    body = page(operator, detail_url(failed_task(backend)))

    assert 'id="tm-requeue"' in body
    assert "tm-exhausted" not in body


def test_a_selection_larger_than_one_action_takes_is_refused_whole(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = [failed_task(backend) for _ in range(2)]
    padding = [f"default:{n:032x}@default" for n in range(MAX_SELECTION)]

    messages = post_action(
        operator,
        {"action": "requeue", "_selected_action": [f"default:{t}" for t in failed] + padding},
    )

    assert messages == [
        "Nothing was requeued: 502 tasks were selected, and one action names at most 500. "
        "Select fewer, or use “Go, on every task this filter matches”."
    ]
    assert [backend.get_result(t).status for t in failed] == [TaskResultStatus.FAILED] * 2


def test_a_selection_of_exactly_the_most_one_action_takes_is_applied(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = failed_task(backend)
    padding = [f"default:{n:032x}@default" for n in range(MAX_SELECTION - 1)]

    messages = post_action(
        operator, {"action": "requeue", "_selected_action": [f"default:{failed}", *padding]}
    )

    assert messages[0] == "1 task requeued."
    assert messages[1].startswith("499 left alone: no such task any more (expired or purged)")
