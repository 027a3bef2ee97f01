"""The task list names a ``?queue=`` or ``?q=`` of 10,000 characters short in what it says.

A queue no backend has stays chosen in the menu as "<queue> (no such queue)", and a search says
"0 tasks with id “<id>”": both echoed the value whole, a page of 10,000 characters more for a
link written by hand. Past 100 characters the label names the queue by its start and length,
as the confirmation of an action on the filter does, and the search its id cut, as the
confirmation names a task path; the form's fields still hold the value whole, so filtering
again keeps it. Every queue and id we make (at most 97 characters) still shows whole.
"""

import pytest
from django.test import Client
from django.utils.html import escape

from tests.admin.conftest import TASKS_URL, page

LONG_QUEUE = "q" * 10_000
LONG_ID = "x" * 10_000


@pytest.mark.usefixtures("backend")
def test_a_queue_filter_of_ten_thousand_characters_is_labelled_by_its_start_and_length(
    operator: Client,
) -> None:
    listed = page(operator, f"{TASKS_URL}?queue={LONG_QUEUE}")

    label = escape(f"{'q' * 100!r}... (10,000 characters)")
    assert f'<option value="{LONG_QUEUE}" selected>{label} (no such queue)</option>' in listed
    assert f"{LONG_QUEUE} (no such queue" not in listed


@pytest.mark.usefixtures("backend")
def test_a_searched_id_of_ten_thousand_characters_is_named_cut_short(operator: Client) -> None:
    listed = page(operator, f"{TASKS_URL}?q={LONG_ID}")

    assert f"<p>0 tasks with id “{'x' * 100}…”.</p>" in listed
    assert f"with id “{LONG_ID}" not in listed
    assert f'name="q" id="tm-q" value="{LONG_ID}"' in listed  # the form keeps it whole


@pytest.mark.usefixtures("backend")
def test_a_queue_and_an_id_of_a_usual_length_are_still_named_whole(operator: Client) -> None:
    queue = page(operator, f"{TASKS_URL}?backend=default&queue={'q' * 64}")
    search = page(operator, f"{TASKS_URL}?q={'x' * 32}@{'q' * 64}")

    label = f"{'q' * 64} (no such queue in default)"
    assert f'<option value="{"q" * 64}" selected>{label}</option>' in queue
    assert f"<p>0 tasks with id “{'x' * 32}@{'q' * 64}”.</p>" in search
