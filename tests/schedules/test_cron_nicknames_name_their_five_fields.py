"""A cron nickname (``@daily``), which cronsim does not read, is refused with its five fields."""

import pytest

from django_threadmill.schedules.checks import BAD_TIMING
from tests.schedules.test_checks import problems

WHERE = "TASKS['default']['OPTIONS']['schedules']['s']: "


@pytest.mark.parametrize(
    ("nickname", "fields"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ],
)
def test_a_nickname_is_an_error_naming_its_five_fields(
    redis_url: str, key_prefix: str, nickname: str, fields: str
) -> None:
    """It was refused as "it has 1 field ...: seconds and years are not supported", which
    does not say what to write instead."""
    [(found_id, found)] = problems(redis_url, key_prefix, cron=nickname)
    assert found_id == BAD_TIMING
    assert found == (
        f"{WHERE}cron {nickname!r} does not parse ({nickname!r} is a nickname: write {fields!r})."
    )
    assert problems(redis_url, key_prefix, cron=fields) == []  # and what it names is taken


def test_reboot_is_an_error_saying_schedules_run_on_slots(redis_url: str, key_prefix: str) -> None:
    [(found_id, found)] = problems(redis_url, key_prefix, cron="@reboot")
    assert found_id == BAD_TIMING
    assert found == (
        f"{WHERE}cron '@reboot' does not parse ('@reboot' has no five-field form: schedules run "
        "on slots of the clock, not when a worker starts. Enqueue the task from your deploy "
        "instead)."
    )
