"""manage.py threadmill_schedules lists each schedule with its next and last fired slot."""

import io
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.schedules.scheduler import Scheduler
from tests.conftest import tasks_setting
from tests.support import django_backend

SCHEDULES = {
    "nightly": {
        "task": "tests.schedules.tasks.report",
        "cron": "0 3 * * *",
        "timezone": "Asia/Tokyo",
    },
    "tick": {"task": "tests.schedules.tasks.report", "every": 60, "queue_name": "emails"},
}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": SCHEDULES}


def listing() -> list[str]:
    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    return out.getvalue().splitlines()


def test_lists_next_and_last_slot(backend: ThreadmillTaskBackend) -> None:
    nightly, tick = listing()
    assert nightly.startswith(
        "nightly  cron '0 3 * * *' (Asia/Tokyo)  task=tests.schedules.tasks.report  queue=default"
    )
    assert "T03:00:00+09:00  last=never" in nightly
    assert tick.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")
    assert "queue=emails" in tick

    Scheduler(backend.pipeline, lambda: datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)).fire_due()
    assert listing()[1].endswith("last=2026-11-30T12:00:00+00:00")


def test_time_zone_none_lists_an_every_schedule_in_utc(redis_url: str, key_prefix: str) -> None:
    """An every schedule's slots are the same in every zone: TIME_ZONE = None (the host's local
    time, which has no zone name) raised a bare TypeError here."""
    tick = {"tick": SCHEDULES["tick"]}
    with override_settings(
        TIME_ZONE=None, TASKS=tasks_setting(redis_url, key_prefix, schedules=tick)
    ):
        [line] = listing()
    assert line.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")


def test_no_schedules_says_so(redis_url: str, key_prefix: str) -> None:
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix)):
        assert listing() == ["No schedules in TASKS['default']['OPTIONS']."]


def test_a_backend_of_another_kind_is_refused() -> None:
    dummy = django_backend("dummy.DummyBackend")
    with (
        override_settings(TASKS={"default": {"BACKEND": dummy}}),
        pytest.raises(
            CommandError,
            match="not a ThreadmillTaskBackend: it has no Redis queues, leases or schedules",
        ),
    ):
        listing()


def test_a_schedule_that_never_fires_is_listed_with_why(redis_url: str, key_prefix: str) -> None:
    """Under --skip-checks (call_command skips them too) a cron that does not parse, or a task
    that does not import, made the listing end in a traceback, the good schedules unlisted."""
    schedules = {
        "broken": {"task": "tests.schedules.tasks.report", "cron": "every day at 3"},
        "gone": {"task": "tests.schedules.no_such_module.report", "every": 60},
        "tick": SCHEDULES["tick"],
    }
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules=schedules)):
        broken, gone, tick = listing()
    assert broken.startswith(
        "broken  cron 'every day at 3'  task=tests.schedules.tasks.report  never fires: cron "
        "'every day at 3' does not parse ("
    )
    assert broken.endswith("). manage.py check names the fix.")
    assert gone.startswith(
        "gone  every 0:01:00  task=tests.schedules.no_such_module.report  never fires: task "
        "'tests.schedules.no_such_module.report' does not import ("
    )
    assert tick.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")
