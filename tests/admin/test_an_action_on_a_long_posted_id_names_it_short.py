"""An admin action on a task id posted by hand, longer than any id, names it short.

The backend's cancel and requeue raise ``TaskResultDoesNotExist(<the whole id>)``, as Django's
own backends do; the admin then said "no such task any more" with the whole id, a message of
10,000 characters kept in the session, and logged it whole on the audit line. Every id we make
is at most 97 characters and is still named whole.
"""

import logging

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import act

LONG = "x" * 10_000 + "@default"  # names a queue, so the action asks Redis
SHOWN_ID = f"{'x' * 100!r}... (10,008 characters)"


@pytest.mark.parametrize(("action", "done"), [("cancel", "cancelled"), ("requeue", "requeued")])
def test_an_id_of_ten_thousand_characters_is_named_by_its_start_and_length(
    operator: Client,
    backend: ThreadmillTaskBackend,
    caplog: pytest.LogCaptureFixture,
    action: str,
    done: str,
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill.admin.audit"):
        messages = act(operator, action, LONG)

    assert messages == [
        f"0 tasks {done}.",
        f"1 left alone: no such task any more (expired or purged): {SHOWN_ID}.",
    ]
    assert [record.getMessage() for record in caplog.records] == [
        f"Admin {action} backend=default task={SHOWN_ID} changed=0 left_alone=1 "
        "by=operator in the admin"
    ]
