"""The audit line of an admin action on every task a filter matches names a queue or task path
of 10,000 characters short.

``filter=`` logged the filter as the list's query string with each value whole: a queue or a
task path posted by hand made a log line of 10,000 characters more, where the confirmation
before it and the ``task=`` of a one-task action name such a value short. Past 100 characters
each value is now named as those are (its start and length), still one query-string field the
line's key=value reading keeps whole; every filter of a usual length is logged as before.
"""

import logging

import pytest
from django.test import Client

from tests.admin.conftest import ACTION_URL, TASKS_URL

LOGGER = "django_threadmill.admin.audit"


def audit_line(client: Client, caplog: pytest.LogCaptureFixture, filters: dict[str, str]) -> str:
    """Confirm a requeue on every task ``filters`` match; return the line it logged."""
    with caplog.at_level(logging.INFO, logger=LOGGER):
        response = client.post(
            ACTION_URL,
            {"action": "requeue", "across": "1", "next": TASKS_URL, "post": "yes", **filters},
        )
    assert response.status_code == 302, response.content.decode()
    [line] = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    return line


@pytest.mark.usefixtures("backend")
def test_a_queue_and_task_path_of_ten_thousand_characters_are_logged_by_start_and_length(
    operator: Client, caplog: pytest.LogCaptureFixture
) -> None:
    line = audit_line(operator, caplog, {"queue": "q" * 10_000, "task": "t" * 10_000})

    assert line == (
        f"Admin requeue backend=default filter=queue='{'q' * 100}'...+(10,000+characters)"
        f"&task='{'t' * 100}'...+(10,000+characters) changed=0 left_alone=0 "
        "by=operator in the admin"
    )


@pytest.mark.usefixtures("backend")
def test_a_filter_of_a_usual_length_is_still_logged_whole(
    operator: Client, caplog: pytest.LogCaptureFixture
) -> None:
    filters = {"queue": "q" * 64, "status": "failed", "task": "shop.tasks.send invoice"}

    line = audit_line(operator, caplog, filters)

    assert line.startswith(
        f"Admin requeue backend=default filter=queue={'q' * 64}&status=failed"
        "&task=shop.tasks.send+invoice changed=0 "
    )
