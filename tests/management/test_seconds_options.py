"""Every option given in seconds refuses NaN, infinity and waits past the timers' reach.

NaN passed every ``<= 0`` check (``threadmill_reap --interval nan`` reaped in a busy loop) and
infinity overflowed the waits (``--grace-period inf`` hung a stopping worker process).
"""

import re

import pytest
from django.core.management import CommandError, call_command, load_command_class

from django_threadmill.management.seconds_option import MAX_SECONDS, seconds_option
from tests.test_command_help import APP, COMMANDS, actions


def seconds_flags() -> list[tuple[str, str]]:
    """Return (command, flag) for every option of the app's commands typed seconds_option."""
    return [
        (name, where)
        for name in COMMANDS
        for where, action in actions(load_command_class(APP, name).create_parser("", name))
        if action.type is seconds_option
    ]


SECONDS_FLAGS = seconds_flags()


def test_every_duration_option_is_parsed_as_seconds() -> None:
    assert sorted(SECONDS_FLAGS) == [
        ("threadmill_health", "--timeout"),
        ("threadmill_reap", "--interval"),
        ("threadmill_worker", "--grace-period"),
        ("threadmill_worker", "--reap-interval"),
        ("threadmill_worker", "--target-wait"),
        ("threadmill_worker", "--task-timeout"),
        ("threadmill_worker", "--thread-idle"),
    ]


NOT_FINITE = "{!r} is not a finite number of seconds. Use e.g. 10 or 0.5."
ABOVE_CEILING = (
    "{} is above the ceiling of 1000000 seconds (about 11 days; waits past 24 days overflow "
    "the system's timers). Use a smaller number."
)


@pytest.mark.parametrize(("command", "flag"), SECONDS_FLAGS)
@pytest.mark.parametrize(
    ("value", "refusal"),
    [
        *((value, NOT_FINITE) for value in ["nan", "inf", "-inf", "-nan", "Infinity", "ten", ""]),
        *((value, ABOVE_CEILING) for value in ["1e300", "1000000.5"]),
    ],
)
def test_nan_infinity_and_overflowing_waits_are_refused_before_anything_starts(
    command: str, flag: str, value: str, refusal: str
) -> None:
    message = f"Error: argument {flag}: {refusal.format(value)}"
    with pytest.raises(CommandError, match=f"^{re.escape(message)}$"):
        call_command(command, f"{flag}={value}")  # "=": argparse takes "-inf" for a flag


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0.5", 0.5), ("10", 10.0), ("1e6", MAX_SECONDS), ("0", 0.0), ("-1", -1.0)],
)
def test_finite_seconds_up_to_the_ceiling_pass(text: str, seconds: float) -> None:
    # Zero and below pass here: each command refuses them in words of its own option
    # (--reap-interval 0 turns the reaper off, --timeout 0 is not positive).
    assert seconds_option(text) == seconds
