"""Bad schedules that used to pass: each is refused at settings or check time, naming the fix."""

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.conf.settings import read_settings
from django_threadmill.schedules.checks import BAD_ARGUMENTS, BAD_TIMING
from django_threadmill.schedules.scheduler import Scheduler
from tests.conftest import tasks_setting
from tests.schedules.test_checks import problems
from tests.support import HandClock

WHERE = "TASKS['default']['OPTIONS']['schedules']['s']: "


@pytest.mark.parametrize("name", ["nightly\n", "nightly\r\n"])
def test_a_name_ending_in_a_line_break_is_refused(name: str) -> None:
    """The name pattern ended in ``$``, which also matches before a final newline: the name
    went into the marker key and split the schedule's log lines."""
    with pytest.raises(ImproperlyConfigured, match=r"has an unusable name\. Use 1-64 letters"):
        read_settings("default", {"OPTIONS": {"schedules": {name: {"task": "a.b", "every": 1}}}})


@pytest.mark.parametrize(
    ("cron", "fields"),
    [("0 30 2 * * *", "6 fields"), ("* * * * * *", "6 fields"), ("0 3 * * * 2030", "6 fields")],
)
def test_a_cron_with_a_seconds_field_is_an_error(
    redis_url: str, key_prefix: str, cron: str, fields: str
) -> None:
    """cronsim reads six fields as seconds first and then follows no daylight saving time:
    '0 30 2 * * *' in Europe/Berlin ran twice on the fall-back night and not at all on the
    spring-forward one, where the five-field '30 2 * * *' runs once on each (docs/schedules.md)."""
    [(found_id, found)] = problems(redis_url, key_prefix, cron=cron, timezone="Europe/Berlin")
    assert found_id == BAD_TIMING
    assert found == (
        f"{WHERE}cron {cron!r} does not parse (it has {fields}, not the five of minute, hour, "
        "day of month, month and day of week: seconds and years are not supported)."
    )


def test_a_cron_with_a_seconds_field_is_dropped_by_a_supervisor_that_skipped_checks(
    redis_url: str, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    seconds = {"task": "tests.schedules.tasks.report", "cron": "* * * * * *"}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules={"s": seconds})):
        clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
        scheduler = Scheduler(task_backends["default"].pipeline, clock)  # type: ignore[attr-defined]
        assert scheduler.fire_due() is None  # not a wait of one second, forever
    assert "Schedule has no slots and is dropped until the worker restarts schedule=s" in (
        caplog.text
    )


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        (
            {"kwargs": {"knid": "daily"}},
            "task 'tests.schedules.tasks.report' cannot take its args and kwargs (got an "
            "unexpected keyword argument 'knid')",
        ),
        (
            {"args": ["daily", "weekly"]},
            "task 'tests.schedules.tasks.report' cannot take its args and kwargs (too many "
            "positional arguments)",
        ),
        (
            {"task": "tests.schedules.tasks.tick"},
            "task 'tests.schedules.tasks.tick' cannot take its args and kwargs (missing a "
            "required argument: 'log_path')",
        ),
    ],
)
def test_arguments_the_task_cannot_take_are_an_error(
    redis_url: str, key_prefix: str, schedule: dict[str, object], problem: str
) -> None:
    """Every slot's task failed when it ran, with Python's TypeError: a keyword renamed in the
    task and not in its schedule was found the next night, not at deploy."""
    [(found_id, found)] = problems(redis_url, key_prefix, **schedule)
    assert found_id == BAD_ARGUMENTS
    assert found == f"{WHERE}{problem}."


def test_arguments_the_task_takes_pass_with_its_context_first(
    redis_url: str, key_prefix: str
) -> None:
    tick = {"task": "tests.schedules.tasks.tick", "kwargs": {"log_path": "/tmp/x"}}
    assert problems(redis_url, key_prefix, **tick) == []
    assert problems(redis_url, key_prefix, args=["weekly"]) == []
