"""The admin checks a pause's reason as ``threadmill_queue pause --reason`` does, with the same
function: a line break (a pasted U+2028, a hand-made POST's "\\n") or more than 200 characters
is shown on the form as an error, the text kept, and nothing is paused or logged.

Before, the admin only trimmed the reason and cut it to 200 characters: a line break was stored
and split the log line that records the pause."""

import logging

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from tests.admin.conftest import QUEUES_URL
from tests.admin.test_queue_pause import PAUSE_URL, confirmed

BREAKS = ["\n", "\r", "\u2028", "\u2029", "\x0b", "\x0c", "\x85"]


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        *((f"mail{mark}provider down", "2 lines") for mark in BREAKS),
        ("x" * 201, "201 characters"),
    ],
)
def test_a_reason_the_command_refuses_is_a_form_error_and_pauses_nothing(
    operator: Client,
    backend: ThreadmillTaskBackend,
    caplog: pytest.LogCaptureFixture,
    reason: str,
    problem: str,
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        response = operator.post(PAUSE_URL, {"post": "yes", "reason": reason})

    assert response.status_code == 200
    page = response.content.decode()
    assert (
        '<ul class="errorlist" id="tm-pause-reason-error"><li>The reason is '
        f"{problem}: give one line of at most 200 characters (the rest belongs in a ticket or "
        "runbook).</li></ul>"
    ) in page
    assert f'size="60" value="{reason}">' in page  # kept, to be edited
    assert Inspector(backend.broker).paused(["default"]) == {}
    assert caplog.messages == []


def test_a_reason_trimmed_to_one_line_of_200_characters_is_taken(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    assert confirmed(operator, PAUSE_URL, reason="\n " + "x" * 200 + "\u2028") == [
        "Paused default / default: workers take none of its tasks until it is resumed."
    ]
    assert Inspector(backend.broker).paused(["default"])["default"].reason == "x" * 200


def test_a_reasons_control_characters_are_shown_escaped_as_the_commands_show_them(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """A terminal's escape typed in a reason is kept, and the queues page shows it as
    ``\\x1b``, as ``threadmill_queue`` and the log do: HTML escaping leaves it raw."""
    confirmed(operator, PAUSE_URL, reason="mail \x1b[31mdown\x1b[0m")
    assert Inspector(backend.broker).paused(["default"])["default"].reason == (
        "mail \x1b[31mdown\x1b[0m"
    )

    page = operator.get(QUEUES_URL).content.decode()
    assert ": mail \\x1b[31mdown\\x1b[0m. Workers take none of its tasks" in page
    assert "\x1b" not in page
