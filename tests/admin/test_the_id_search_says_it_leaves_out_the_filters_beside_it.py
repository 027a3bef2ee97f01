"""The search by id finds a task wherever it is (docs/admin.md, Tasks: without its "@queue" every
queue is tried), so the queue, status and task path filters beside it do not narrow it. The page
says so: it listed a task of queue default under "Queue: emails" and "Status: FAILED" without a
word, as if the filters had matched it."""

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add, send_welcome
from tests.admin.conftest import TASKS_URL, page, successful_task
from tests.backend_support import succeed


def test_a_search_under_filters_finds_the_task_and_names_the_filters_it_leaves_out(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    default_id = successful_task(backend)
    emails_id = send_welcome.enqueue("a@example.com").id
    succeed(backend, emails_id, "sent")
    hex_part = default_id.split("@")[0]

    listed = page(
        operator,
        f"{TASKS_URL}?queue=emails&status=failed&task=send_welcome&q={hex_part}",
    )

    assert default_id in listed
    assert emails_id not in listed
    assert "1 task with id “" in listed
    assert (
        "The search by id looks in every queue and state: it leaves out the filters beside it "
        "(queue “emails”, status FAILED and task path “send_welcome”)." in listed
    )


def test_a_search_under_no_such_filter_says_nothing_of_them(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = successful_task(backend)

    listed = page(operator, f"{TASKS_URL}?backend=default&q={task_id}")

    assert task_id in listed
    assert "The search by id looks in every queue" not in listed


@pytest.mark.usefixtures("two_aliases")
def test_a_search_under_a_backend_filter_says_it_looks_in_that_backend_only(
    operator: Client,
) -> None:
    """The backend filter does narrow the search: a task of another alias was "No task
    matches." without a word on where the search had looked."""
    task_id = add.using(backend="bulk", queue_name="bulk-in").enqueue(1, 1).id

    under_default = page(operator, f"{TASKS_URL}?backend=default&q={task_id}")
    everywhere = page(operator, f"{TASKS_URL}?q={task_id}")

    assert "0 tasks with id “" in under_default
    assert (
        "The search by id looks in backend “default” only, as the Backend filter chose: "
        "choose All backends to look in every one." in under_default
    )
    assert f'/bulk/{task_id}/"' in everywhere
    assert "looks in backend" not in everywhere
