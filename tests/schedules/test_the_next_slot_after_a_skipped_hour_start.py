"""A supervisor started just after a DST change that skipped the start of an hour fires the
next slot: Pacific/Chatham springs forward from 02:45 to 03:45, and cronsim, started from
03:50, rounded down to 03:00 (in the gap) and answered a slot an hour or a day late."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.conftest import tasks_setting
from tests.support import HandClock

CHATHAM = ZoneInfo("Pacific/Chatham")
Clock = HandClock[datetime]


def chatham(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=CHATHAM).astimezone(UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("cron", "fired_before", "next_one"),
    [
        # 2026-09-27: 02:45 +12:45 jumps to 03:45 +13:45; 03:50 answered 06:00.
        ("0 */2 * * *", chatham(2026, 9, 27, 2, 0), chatham(2026, 9, 27, 4, 0)),
        # A wildcard minute of a fixed hour: 03:50 answered the next day's 04:00.
        ("*/15 4 * * *", chatham(2026, 9, 26, 4, 45), chatham(2026, 9, 27, 4, 0)),
    ],
)
def test_a_supervisor_started_after_a_spring_forward_fires_the_next_slot(
    redis_url: str,
    key_prefix: str,
    cron: str,
    fired_before: datetime,
    next_one: datetime,
) -> None:
    job = {"task": "tests.schedules.tasks.report", "cron": cron, "timezone": "Pacific/Chatham"}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules={"job": job})):
        pipeline = task_backends["default"].pipeline  # type: ignore[attr-defined]
        clock = Clock(fired_before - timedelta(minutes=1))
        Scheduler(pipeline, clock).fire_due()  # the schedule is seen: its next slot fires
        clock.now = fired_before
        Scheduler(pipeline, clock).fire_due()
        assert pipeline.broker.last_fired_ms("default", "job") == slot_ms(fired_before)

        clock.now = chatham(2026, 9, 27, 3, 50)  # a deploy restarts the supervisor
        restarted = Scheduler(pipeline, clock)
        restarted.fire_due()  # the slot before is fired already: it waits for the next
        clock.now = next_one
        restarted.fire_due()
        task_id = slot_task_id("default", "job", slot_ms(next_one), "default")
        assert pipeline.broker.record(task_id) is not None, (
            f"the {next_one.astimezone(CHATHAM)} slot was not fired"
        )
        assert pipeline.broker.last_fired_ms("default", "job") == slot_ms(next_one)
