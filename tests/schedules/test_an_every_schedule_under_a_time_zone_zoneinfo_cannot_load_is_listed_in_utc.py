"""An ``every`` schedule fires on the same instants in every zone, so a ``TIME_ZONE`` that
zoneinfo cannot load does not stop ``threadmill_schedules`` listing it.

Django lets such a zone by: ``"America"``, a directory of zones rather than one, passes its own
check, and a host without ``/usr/share/zoneinfo`` skips that check. The listing then ended in
zoneinfo's traceback, where a cron schedule under the same zone is listed as never firing.
"""

import io

import pytest
from django.core.management import call_command
from django.test import override_settings

from tests.conftest import tasks_setting

TICK = {"task": "tests.schedules.tasks.report", "every": 60}
NIGHTLY = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *"}


def listing() -> list[str]:
    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("time_zone", ["America", "Europe/Berln"])
def test_an_every_schedule_is_listed_in_utc_and_a_cron_one_as_never_firing(
    redis_url: str, key_prefix: str, time_zone: str
) -> None:
    schedules = {"tick": TICK, "nightly": NIGHTLY}
    tasks = tasks_setting(redis_url, key_prefix, schedules=schedules)
    with override_settings(TIME_ZONE=time_zone, TASKS=tasks):
        tick, nightly = listing()
    assert tick.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")
    assert "last=never" in tick
    assert nightly.startswith("nightly  cron '0 3 * * *'  task=tests.schedules.tasks.report")
    assert f"never fires: it sets no 'timezone', and TIME_ZONE {time_zone!r} is unknown" in nightly
