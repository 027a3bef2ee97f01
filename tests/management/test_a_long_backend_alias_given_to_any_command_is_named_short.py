"""A ``--backend`` alias of 10,000 characters is named short by every command that takes one.

``--backend <alias>: TASKS has no backend …`` cut the alias short after the colon, but the
option's own prefix echoed it whole: a message of 10,196 characters, from threadmill_worker,
threadmill_reap, threadmill_queue, threadmill_health and threadmill_schedules alike. Every
alias worth reading still shows whole (``--backend nope: …``).
"""

import pytest
from django.core.management import CommandError, call_command

LONG = "x" * 10_000
EXPECTED = (
    f"--backend {'x' * 100!r}... (10,000 characters): TASKS has no backend "
    f"'{'x' * 47}...{'x' * 48}'. Use an alias of a ThreadmillTaskBackend in TASKS ('default')."
)


@pytest.mark.parametrize(
    "command",
    [
        ["threadmill_worker"],
        ["threadmill_reap", "--once"],
        ["threadmill_queue", "pause", "default"],
        ["threadmill_health"],
        ["threadmill_schedules"],
    ],
    ids=lambda command: command[0],
)
@pytest.mark.usefixtures("backend", "logging_put_back")
def test_an_alias_of_ten_thousand_characters_is_named_by_its_start_and_length(
    command: list[str],
) -> None:
    with pytest.raises(CommandError) as refused:
        call_command(*command, "--backend", LONG)

    assert str(refused.value) == EXPECTED


@pytest.mark.usefixtures("backend", "logging_put_back")
def test_an_alias_worth_reading_is_still_named_whole() -> None:
    with pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "pause", "default", "--backend", "nope")

    assert str(refused.value).startswith("--backend nope: TASKS has no backend 'nope'. Use ")
