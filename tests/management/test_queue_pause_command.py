"""manage.py threadmill_queue pause / resume: what it says, and the errors that name the fix.

A running worker obeying it is tests/worker/test_paused_queue.py.
"""

import logging
import re

import pytest
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.support import output_of


def test_pause_says_what_it_does_and_records_who_and_why(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        out = output_of("threadmill_queue", "pause", "emails", "--reason", "mail provider down")

    assert out == (
        "Paused queue emails of backend default: workers take none of its tasks until "
        "'manage.py threadmill_queue resume emails'. Tasks a worker holds already (running, or "
        "reserved in its buffer) still run; enqueue still accepts new ones.\n"
    )
    pause = Inspector(backend.broker).paused(["emails"])["emails"]
    assert pause.by.endswith(" with manage.py threadmill_queue")
    assert pause.reason == "mail provider down"
    assert caplog.messages == [
        f"Queue paused backend=default queue=emails by={pause.by} reason=mail provider down"
    ]


def test_pausing_a_paused_queue_says_since_when_and_changes_nothing(
    backend: ThreadmillTaskBackend,
) -> None:
    backend.broker.pause("emails", "ada in the admin", "deploy")

    out = output_of("threadmill_queue", "pause", "emails", "--reason", "another")

    assert re.fullmatch(
        r"The queue emails of backend default was paused already since "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 by ada in the admin \(deploy\); "
        r"nothing changed\.\n",
        out,
    )
    assert Inspector(backend.broker).paused(["emails"])["emails"].reason == "deploy"


def test_resume_says_so_and_a_second_resume_changes_nothing(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    output_of("threadmill_queue", "pause", "emails")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        assert output_of("threadmill_queue", "resume", "emails") == (
            "Resumed queue emails of backend default: idle workers were woken to take its tasks.\n"
        )
    [logged] = caplog.messages
    assert logged.startswith("Queue resumed backend=default queue=emails by=")
    assert Inspector(backend.broker).paused(["emails"]) == {}
    assert output_of("threadmill_queue", "resume", "emails") == (
        "The queue emails of backend default was not paused; nothing changed.\n"
    )


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_a_queue_not_in_queues_is_an_error_naming_them(
    backend: ThreadmillTaskBackend, action: str
) -> None:
    with pytest.raises(CommandError) as raised:
        output_of("threadmill_queue", action, "emials")
    assert str(raised.value) == (
        "Queue 'emials' is not in TASKS['default']['QUEUES'] (default, emails and reports). Add it "
        "there or pick one of those."
    )
    assert Inspector(backend.broker).paused(["emials"]) == {}


def test_a_name_that_is_no_queue_name_is_an_error_naming_the_rule(
    backend: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(CommandError, match=r"Queue name 'a b' is not valid .* Use 1-64 letters"):
        output_of("threadmill_queue", "pause", "a b")


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        ("mail\nprovider down", "2 lines"),
        ("down\n", "a line and a line break"),
        ("x" * 201, "201 characters"),
    ],
)
def test_a_reason_is_one_line_of_at_most_200_characters(
    backend: ThreadmillTaskBackend, reason: str, problem: str
) -> None:
    """As the admin keeps one: a line break split the log line that records the pause (and
    could forge a second one), and the queues page shows it on one line."""
    with pytest.raises(CommandError, match=f"--reason is {problem}: give one line of at most 200"):
        output_of("threadmill_queue", "pause", "emails", "--reason", reason)
    assert Inspector(backend.broker).paused(["emails"]) == {}

    output_of("threadmill_queue", "pause", "emails", "--reason", "x" * 200)
    assert Inspector(backend.broker).paused(["emails"])["emails"].reason == "x" * 200
