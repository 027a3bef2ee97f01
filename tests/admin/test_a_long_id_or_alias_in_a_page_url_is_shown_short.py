"""A task id or backend alias in a page's URL that names nothing is shown short on its 404 page.

"No task …" and "No ThreadmillTaskBackend alias …" echoed the whole value: a URL of 10,000
characters made a page (and its note) of 10,000 more. Every id we make, and every alias worth
reading, shows whole; a longer one is shown by its start and its length.
"""

from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import TASKS_URL, detail_url
from tests.admin.test_not_found_pages_say_why import not_found

LONG = "x" * 10_000
SHOWN_ID = f"{'x' * 100!r}... (10,000 characters)"
SHOWN_ALIAS = f"'{'x' * 47}...{'x' * 48}'"  # its start and end, 100 characters in all


def test_a_task_id_of_ten_thousand_characters_is_shown_by_its_start_and_length(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    expected = (
        f"No task {SHOWN_ID} in backend 'default': it never existed, or its result expired "
        "(result_ttl) or was purged."
    )

    assert not_found(operator, detail_url(LONG)) == expected
    assert not_found(operator, f"{detail_url(LONG)}raw/result/") == expected


def test_an_alias_of_ten_thousand_characters_is_shown_cut_short(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    assert not_found(operator, f"{TASKS_URL}{LONG}/{'0' * 32}@default/") == (
        f"No ThreadmillTaskBackend alias {SHOWN_ALIAS} in TASKS."
    )
