"""A cron field cronsim refuses is named with what it takes: cronsim says only which field
("Bad minute"), alike for a step of 0, a value out of range and a day no month given has."""

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.schedules.checks import BAD_TIMING, schedule_messages
from tests.conftest import tasks_setting

FORMS = "as one value, a list (1,5), a range (1-5, not 5-1) or a step of 1 or more (*/15, 0-30/10)"


@pytest.mark.parametrize(
    ("cron", "takes"),
    [
        ("*/0 * * * *", "(Bad minute); its minute takes 0-59, "),
        ("60 * * * *", "(Bad minute); its minute takes 0-59, "),
        ("0 24 * * *", "(Bad hour); its hour takes 0-23, "),
        ("0 0 31 2 *", "(Bad day-of-month); its day-of-month takes 1-31, L or LW, on a day one "),
        ("0 0 * 13 *", "(Bad month); its month takes 1-12 or JAN-DEC, "),
        ("0 0 * * FRI-MON", "(Bad day-of-week); its day-of-week takes 0-7 (0 and 7 are Sunday)"),
    ],
)
def test_the_error_names_what_the_field_takes(
    redis_url: str, key_prefix: str, cron: str, takes: str
) -> None:
    schedules = {"s": {"task": "tests.schedules.tasks.report", "cron": cron}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules=schedules)):
        backend = task_backends["default"]
        [message] = schedule_messages(backend.settings, backend.queues)  # type: ignore[attr-defined]
    assert message.id == BAD_TIMING
    assert f"cron {cron!r} does not parse {takes}" in message.msg
    assert message.msg.endswith(f"{FORMS}.")
