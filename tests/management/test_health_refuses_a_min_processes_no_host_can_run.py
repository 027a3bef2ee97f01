"""threadmill_health refuses a --min-processes above the processes a host can run, as a usage
error (exit 2), naming a number of thousands of digits by its size.

Before, ``--min-processes 99999…`` (4,000 digits) was taken: the probe failed "too few" (exit 1)
at every run, so a liveness probe restarted a healthy pod for ever, and its line held every
digit (``min_processes=99999…``, 4 KB).
"""

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.management.health import HealthCode


@pytest.mark.parametrize(
    ("given", "named"),
    [("4194305", "4194305"), ("9" * 4000, "an int of about 4000 digits")],
    ids=["past the pid limit", "thousands of digits"],
)
def test_a_min_processes_past_the_pid_limit_is_a_usage_error(given: str, named: str) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("threadmill_health", "--min-processes", given)

    assert raised.value.returncode == HealthCode.USAGE
    assert str(raised.value) == (
        f"--min-processes {named} is above the 4,194,304 processes a host can run (Linux's pid "
        "limit), so the probe could never pass. Use the --processes the worker runs with."
    )
