"""A host with no time zone database (an Alpine image without tzdata): zoneinfo loads no zone,
not even "UTC". The check named 'Europe/Berlin' as unknown and hinted at 'Europe/Berlin', and
``threadmill_schedules`` ended in zoneinfo's traceback for an ``every`` schedule, whose
fallback to UTC needed the database too."""

import io
import sys
import zoneinfo
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from tests.conftest import tasks_setting

NIGHTLY = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *"}
TICK = {"task": "tests.schedules.tasks.report", "every": 60}


@pytest.fixture
def no_zone_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Leave zoneinfo an empty zone directory and no tzdata package, for this test only."""
    monkeypatch.setitem(sys.modules, "tzdata", None)  # None in sys.modules: not importable
    zoneinfo.reset_tzpath(to=[str(tmp_path)])
    zoneinfo.ZoneInfo.clear_cache()
    yield
    zoneinfo.reset_tzpath()
    zoneinfo.ZoneInfo.clear_cache()


def listing() -> list[str]:
    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    return out.getvalue().splitlines()


@pytest.mark.usefixtures("no_zone_database")
def test_the_check_names_the_missing_database_and_its_fix(redis_url: str, key_prefix: str) -> None:
    schedules = {"berlin": {**NIGHTLY, "timezone": "Europe/Berlin"}, "nightly": NIGHTLY}
    tasks = tasks_setting(redis_url, key_prefix, schedules=schedules)
    with override_settings(TIME_ZONE="UTC", TASKS=tasks), pytest.raises(SystemCheckError) as raised:
        call_command("check")
    message = str(raised.value)
    for given, zone in [("its 'timezone'", "Europe/Berlin"), ("TIME_ZONE", "UTC")]:
        assert (
            f"its time zone ({given}) {zone!r} cannot be loaded: this host has no time zone "
            "database for zoneinfo to read"
        ) in message
    assert message.count("Install one: pip install tzdata") == 2


@pytest.mark.usefixtures("no_zone_database")
def test_an_every_schedule_is_listed_in_utc_and_a_cron_one_as_never_firing(
    redis_url: str, key_prefix: str
) -> None:
    tasks = tasks_setting(redis_url, key_prefix, schedules={"tick": TICK, "nightly": NIGHTLY})
    with override_settings(TIME_ZONE="UTC", TASKS=tasks):
        tick, nightly = listing()
    assert tick.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")
    assert "next=" in tick
    assert "never fires: its time zone (TIME_ZONE) 'UTC' cannot be loaded" in nightly
