"""A TASKS setting a ThreadmillTaskBackend refuses is one line naming it and the fix, in every
command whose checks build the backends: Django's own task check met it as a traceback."""

import pytest

from tests.support import Command


@pytest.mark.parametrize(
    "command",
    [
        ("check",),
        ("threadmill_worker", "--burst"),
        ("threadmill_reap", "--once"),
        ("threadmill_queue", "damaged"),
        ("threadmill_schedules",),
    ],
)
def test_a_refused_option_is_one_line_naming_the_fix(
    redis_url: str, key_prefix: str, command: tuple[str, ...]
) -> None:
    ran = Command(redis_url, key_prefix, *command, options={"result_ttl": -5})
    try:
        assert ran.wait() == 1, ran.log
        assert "CommandError: TASKS: OPTIONS['result_ttl'] is -5." in ran.log
        assert "Traceback" not in ran.log
    finally:
        ran.close()
