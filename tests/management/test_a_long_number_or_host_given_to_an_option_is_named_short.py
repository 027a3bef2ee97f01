"""A number or host name of thousands of characters given to a command's option is named short.

Each refusal echoed the value whole: ``--grace-period`` (and every option in seconds) of
10,000 characters, ``--max-memory``, ``threadmill_queue purge --batch-size`` and
``threadmill_health --host`` in a message of some 10,150 characters; and an int of 4,000
digits, which argparse reads, in ``threadmill_worker``'s ``--processes``, ``--threads`` (or any
option with a ceiling), ``threadmill_health --min-processes`` and ``threadmill_reap
--batch-size``; and argparse's own "invalid int value" of each whole-number option, for an
int past Python's 4,300 digits. Text is now cut as other values given in error are
(wording.shown), an int named by its size; every value of a usual length still shows whole.
"""

import pytest
from django.core.management import CommandError, call_command

TEXT = "x" * 10_000
DIGITS = "9" * 4_000
CUT = f"'{'x' * 47}...{'x' * 48}'"  # TEXT's start and end, 100 characters in all
CUT_DIGITS = f"'{'9' * 47}...{'9' * 48}'"
CUT_ONES = f"'{'1' * 47}...{'1' * 48}'"
SIZE = "an int of about 4000 digits"
BATCH = (
    "is not a whole number from 1 to 10,000: a batch is one script call, and Redis serves no "
    "other client while it runs. Use e.g. 500."
)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ["threadmill_worker", "--grace-period", TEXT],
            f"Error: argument --grace-period: {CUT} is not a finite number of seconds. Use e.g. "
            "10 or 0.5.",
        ),
        (
            ["threadmill_worker", "--grace-period", "1000001." + "0" * 10_000],
            f"Error: argument --grace-period: {'1000001.' + '0' * 92!r}... (10,008 characters) "
            "is above the ceiling of 1000000 seconds (about 11 days; waits past 24 days "
            "overflow the system's timers). Use a smaller number.",
        ),
        (
            ["threadmill_worker", "--max-memory", "1" * 10_000],
            f"Error: argument --max-memory: {CUT_ONES} is not a whole number of MiB. Give the "
            "number alone: --max-memory 512 for 512 MiB, 1024 for 1 GiB.",
        ),
        (
            ["threadmill_worker", "--processes", DIGITS],
            f"--processes {SIZE} is above the ceiling of 1000 worker processes per supervisor. "
            "Run more supervisors (hosts or containers) instead.",
        ),
        (
            ["threadmill_worker", "--processes", f"-{DIGITS}"],
            f"--processes must be 0 or more, got {SIZE}.",
        ),
        (
            ["threadmill_worker", "--processes", "1", "--threads", f"-{DIGITS}"],
            f"--threads must be 1 or more, got {SIZE}.",
        ),
        (
            ["threadmill_worker", "--processes", "1", "--prefetch", DIGITS],
            f"--prefetch {SIZE} is above the ceiling of 10000 tasks reserved ahead per process: "
            "a crashed process would hold that many tasks until their leases lapse. Use more "
            "processes instead.",
        ),
        (
            ["threadmill_health", "--host", TEXT + ":"],
            f"--host '{'x' * 47}...{'x' * 47}:' cannot be a worker's host: worker ids name it "
            "before their first ':'. Give the host name alone, as socket.gethostname() on the "
            "worker's host returns it, e.g. --host worker-7c9f, or leave --host out on that host.",
        ),
        (
            ["threadmill_health", "--min-processes", f"-{DIGITS}"],
            f"--min-processes {SIZE} is below 1. Use e.g. --min-processes 1, or the "
            "--processes the worker runs with.",
        ),
        (
            ["threadmill_health", "--timeout", TEXT],
            f"Error: argument --timeout: {CUT} is not a finite number of seconds. Use e.g. 10 "
            "or 0.5.",
        ),
        (
            ["threadmill_reap", "--once", "--batch-size", DIGITS],
            f"--batch-size {SIZE} {BATCH}",
        ),
        (
            ["threadmill_queue", "purge", "default", "--batch-size", "1" * 10_000],
            f"Error: argument --batch-size: {CUT_ONES} {BATCH}",
        ),
        (
            ["threadmill_queue", "purge", "default", "--batch-size", DIGITS],
            f"Error: argument --batch-size: {CUT_DIGITS} {BATCH}",
        ),
        (
            ["threadmill_worker", "--threads", "1" * 10_000],
            f"Error: argument --threads: invalid int value: {CUT_ONES}",
        ),
        (
            ["threadmill_health", "--min-processes", "1" * 10_000],
            f"Error: argument --min-processes: invalid int value: {CUT_ONES}",
        ),
        (
            ["threadmill_reap", "--once", "--batch-size", "1" * 10_000],
            f"Error: argument --batch-size: invalid int value: {CUT_ONES}",
        ),
    ],
    ids=[
        "worker --grace-period not a number",
        "worker --grace-period above the ceiling",
        "worker --max-memory",
        "worker --processes above the ceiling",
        "worker --processes below 0",
        "worker --threads below 1",
        "worker --prefetch above the ceiling",
        "health --host",
        "health --min-processes",
        "health --timeout",
        "reap --batch-size",
        "queue purge --batch-size too long for an int",
        "queue purge --batch-size",
        "worker --threads too long for an int",
        "health --min-processes too long for an int",
        "reap --batch-size too long for an int",
    ],
)
@pytest.mark.usefixtures("backend", "logging_put_back")
def test_a_value_of_thousands_of_characters_is_named_short(command: list[str], said: str) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(*command)

    assert str(refused.value) == said


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (
            ["threadmill_worker", "--grace-period", "2000000"],
            "Error: argument --grace-period: 2000000 is above the ceiling of 1000000 seconds",
        ),
        (["threadmill_worker", "--processes", "-12"], "--processes must be 0 or more, got -12."),
        (["threadmill_health", "--host", "a:b"], "--host 'a:b' cannot be a worker's host"),
        (["threadmill_reap", "--once", "--batch-size", "0"], f"--batch-size 0 {BATCH}"),
        (
            ["threadmill_worker", "--threads", "x"],
            "Error: argument --threads: invalid int value: 'x'",
        ),
    ],
    ids=["seconds", "an int", "a host", "a batch size", "not an int"],
)
@pytest.mark.usefixtures("backend", "logging_put_back")
def test_a_value_of_a_usual_length_is_still_named_whole(command: list[str], said: str) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(*command)

    assert str(refused.value).startswith(said)
