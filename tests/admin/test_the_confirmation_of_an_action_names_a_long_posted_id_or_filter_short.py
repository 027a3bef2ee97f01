"""The page confirming an admin action names a posted id, queue or task path of 10,000
characters short.

The confirmation of a cancel or requeue listed the posted id whole in its table (after it, the
messages and the audit line named it short), and the confirmation of an action on every task a
filter matches named the filter's queue and task path whole: each a page of 10,000 characters
more. The hidden field still carries the id whole, so confirming acts on the id posted; every
id we make (at most 97 characters) is still shown whole.
"""

import pytest
from django.test import Client
from django.utils.html import escape

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import ACTION_URL, TASKS_URL, failed_task, selection

LONG = "x" * 10_000 + "@default"  # names a queue, so the page asks Redis for its state


def confirmation(client: Client, data: dict[str, object]) -> str:
    """Post an action unconfirmed; check it answered with its confirmation page."""
    response = client.post(ACTION_URL, {"next": TASKS_URL, **data})
    assert response.status_code == 200, response.content.decode()
    return response.content.decode()


@pytest.mark.parametrize("action", ["cancel", "requeue"])
def test_a_posted_id_of_ten_thousand_characters_is_listed_by_its_start_and_length(
    operator: Client, backend: ThreadmillTaskBackend, action: str
) -> None:
    real = failed_task(backend)

    page = confirmation(operator, {"action": action, "_selected_action": selection(LONG, real)})

    shown = escape(f"{'x' * 100!r}... (10,008 characters)")
    assert f"<tr><td>default</td><td>{shown}</td><td>gone</td></tr>" in page
    assert f"<tr><td>default</td><td>{real}</td><td>FAILED</td></tr>" in page
    assert page.count(LONG) == 1  # the hidden field, which a confirmation posts back
    assert f'name="_selected_action" value="default:{LONG}"' in page


@pytest.mark.parametrize("action", ["cancel", "requeue"])
@pytest.mark.usefixtures("backend")
def test_a_posted_queue_or_task_path_of_ten_thousand_characters_is_named_short(
    operator: Client, action: str
) -> None:
    filters = {"queue": "q" * 10_000, "task": "t" * 10_000}

    page = confirmation(operator, {"action": action, "across": "1", **filters})

    queue = escape(f"{'q' * 100!r}... (10,000 characters)")
    assert f"match queue {queue}, status All states, task path containing “{'t' * 100}…”." in page
    assert "q" * 10_000 not in page
    assert "t" * 10_000 not in page
