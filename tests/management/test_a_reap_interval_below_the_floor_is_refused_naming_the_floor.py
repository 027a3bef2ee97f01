"""A reap interval below 0.05 s is refused, naming the floor, before anything starts.

``threadmill_reap --interval 0.000001`` (and a worker's ``--reap-interval`` as short) ran its
passes back to back: about 1,400 passes and 54,000 Redis commands in 2 s, settling no lease
sooner, as a lease lasts 1 s at the shortest.
"""

import re

import pytest
from django.core.management import CommandError, call_command, load_command_class

from django_threadmill.management.reap_interval import MIN_REAP_INTERVAL_S

pytestmark = pytest.mark.usefixtures("backend", "logging_put_back")


def refusal(flag: str, fix: str) -> str:
    return re.escape(
        f"{flag} 1e-06 is below the floor of 0.05 seconds: passes that close run back to back, "
        f"each tens of Redis commands, and settle no lease sooner. {fix}"
    )


def test_threadmill_reap_refuses_an_interval_below_the_floor() -> None:
    # --once: before the fix, the command ran its pass and returned instead of looping.
    with pytest.raises(CommandError, match=refusal("--interval", "Use 0.05 or more, e.g. 10.")):
        call_command("threadmill_reap", "--once", "--interval", "0.000001")


def test_threadmill_worker_refuses_a_reap_interval_below_the_floor() -> None:
    # --processes 0 --burst: before the fix, the worker ran the empty queues and returned.
    fix = "Use 0.05 or more, or 0 to leave reaping to threadmill_reap."
    with pytest.raises(CommandError, match=refusal("--reap-interval", fix)):
        call_command(
            "threadmill_worker", "--processes", "0", "--burst", "--reap-interval", "0.000001"
        )


@pytest.mark.parametrize(
    "args",
    [
        ("threadmill_reap", "--once", "--interval", str(MIN_REAP_INTERVAL_S)),
        ("threadmill_worker", "--processes", "0", "--burst", "--reap-interval", "0"),
        ("threadmill_worker", "--processes", "0", "--burst", "--reap-interval", "0.05"),
    ],
)
def test_the_floor_itself_and_a_worker_s_zero_are_taken(args: tuple[str, ...]) -> None:
    call_command(*args)


@pytest.mark.parametrize(
    ("command", "flag"),
    [("threadmill_reap", "--interval"), ("threadmill_worker", "--reap-interval")],
)
def test_the_help_names_the_floor(command: str, flag: str) -> None:
    parser = load_command_class("django_threadmill", command).create_parser("manage.py", command)
    (action,) = [a for a in parser._actions if flag in a.option_strings]
    assert "0.05 or more" in (action.help or "")
