"""The Scheduler with an injected clock: each slot once, missed slots once, DST, no leader."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.conftest import tasks_setting
from tests.support import HandClock

BERLIN = ZoneInfo("Europe/Berlin")
SCHEDULES = {
    "tick": {"task": "tests.schedules.tasks.report", "every": 60, "kwargs": {"kind": "tick"}},
    "nightly": {
        "task": "tests.schedules.tasks.report",
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "queue_name": "reports",
    },
}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": SCHEDULES}


Clock = HandClock[datetime]


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))


@pytest.fixture
def scheduler(backend: ThreadmillTaskBackend, clock: Clock) -> Scheduler:
    return Scheduler(backend.pipeline, clock)


@pytest.fixture
def fired(backend: ThreadmillTaskBackend) -> Callable[[str, str, datetime], bool]:
    """Tell whether the task of ``schedule``'s slot at ``at`` exists in ``queue``."""

    def exists(schedule: str, queue: str, at: datetime) -> bool:
        task_id = slot_task_id("default", schedule, slot_ms(at), queue)
        return backend.broker.record(task_id) is not None

    return exists


def utc(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


def berlin(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=BERLIN).astimezone(UTC)  # type: ignore[misc]


def test_a_new_schedule_starts_with_its_next_slot(
    scheduler: Scheduler, clock: Clock, fired: Callable[..., bool], backend: ThreadmillTaskBackend
) -> None:
    wait = scheduler.fire_due()
    assert not fired("tick", "default", utc(2026, 3, 28, 12, 0))  # first seen: nothing to catch up
    assert wait == timedelta(seconds=30)  # supervisors sleep until the next slot
    clock.now = utc(2026, 3, 28, 12, 1, 0)
    assert scheduler.fire_due() == timedelta(seconds=60)
    assert fired("tick", "default", utc(2026, 3, 28, 12, 1))
    assert backend.broker.last_fired_ms("default", "tick") == slot_ms(utc(2026, 3, 28, 12, 1))


def test_every_supervisor_may_fire_a_slot_and_one_task_exists(
    backend: ThreadmillTaskBackend, clock: Clock, redis_client: redis.Redis
) -> None:
    supervisors = [Scheduler(backend.pipeline, clock) for _ in range(3)]
    for scheduler in supervisors:
        scheduler.fire_due()
    clock.now = utc(2026, 3, 28, 12, 1, 0, 5000)
    for scheduler in supervisors:
        scheduler.fire_due()
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 1


def test_a_finished_and_expired_slot_never_fires_again(
    backend: ThreadmillTaskBackend, clock: Clock, redis_client: redis.Redis
) -> None:
    Scheduler(backend.pipeline, clock).fire_due()
    clock.now = utc(2026, 3, 28, 12, 1, 0)
    Scheduler(backend.pipeline, clock).fire_due()
    keys = backend.broker.queue_keys("default")
    [task_id] = redis_client.zrange(keys.ready, 0, -1)
    redis_client.delete(keys.record(task_id), keys.ready)  # as if it ran and result_ttl passed
    Scheduler(backend.pipeline, clock).fire_due()  # a late supervisor, still in the same slot
    assert redis_client.zcard(keys.ready) == 0


def test_slots_missed_while_no_supervisor_ran_fire_once(
    scheduler: Scheduler, clock: Clock, fired: Callable[..., bool], redis_client: redis.Redis
) -> None:
    scheduler.fire_due()
    clock.now = utc(2026, 3, 28, 12, 10, 15)  # ten slots later, a fresh supervisor starts
    Scheduler(scheduler.pipeline, clock).fire_due()
    assert fired("tick", "default", utc(2026, 3, 28, 12, 10))
    keys = scheduler.pipeline.broker.queue_keys("default")
    assert redis_client.zcard(keys.ready) == 1  # the latest slot only, not one per missed slot


def test_cron_fires_at_its_slot_across_spring_forward(
    scheduler: Scheduler, clock: Clock, fired: Callable[..., bool]
) -> None:
    scheduler.fire_due()
    clock.now = berlin(2026, 3, 29, 1, 59)
    scheduler.fire_due()
    assert not fired("nightly", "reports", berlin(2026, 3, 29, 3, 0))
    clock.now = berlin(2026, 3, 29, 3, 0)  # 02:30 does not exist today: it runs at 03:00
    assert scheduler.fire_due() is not None
    assert fired("nightly", "reports", berlin(2026, 3, 29, 3, 0))
    clock.now = berlin(2026, 3, 30, 2, 30)
    scheduler.fire_due()
    assert fired("nightly", "reports", berlin(2026, 3, 30, 2, 30))


def test_cron_fires_once_when_fall_back_repeats_its_time(
    backend: ThreadmillTaskBackend, clock: Clock, redis_client: redis.Redis
) -> None:
    clock.now = utc(2026, 10, 24, 12, 0)
    scheduler = Scheduler(backend.pipeline, clock)
    scheduler.fire_due()
    reports = backend.broker.queue_keys("reports").ready
    clock.now = utc(2026, 10, 25, 0, 30)  # 02:30 CEST
    scheduler.fire_due()
    assert redis_client.zcard(reports) == 1
    clock.now = utc(2026, 10, 25, 1, 30)  # 02:30 again, now CET
    scheduler.fire_due()
    Scheduler(backend.pipeline, clock).fire_due()  # a supervisor that starts in the repeated hour
    assert redis_client.zcard(reports) == 1


type BesideTick = Callable[..., list[timedelta | None]]


@pytest.fixture
def beside_tick(redis_url: str, key_prefix: str, clock: Clock) -> BesideTick:
    """Fire a schedule (name, setting) beside SCHEDULES' tick at the clock's time, then a
    minute later, under the Django settings given as keywords; return the two waits."""

    def fire(name: str, schedule: dict[str, object], **settings: object) -> list[timedelta | None]:
        options = {"schedules": {name: schedule, "tick": SCHEDULES["tick"]}}
        with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **options), **settings):
            scheduler = Scheduler(task_backends["default"].pipeline, clock)  # type: ignore[attr-defined]
            first = scheduler.fire_due()
            clock.now = utc(2026, 3, 28, 12, 1, 0)
            return [first, scheduler.fire_due()]

    return fire


def test_a_schedule_that_cannot_fire_is_logged_and_the_others_fire(
    beside_tick: BesideTick, fired: Callable[..., bool], caplog: pytest.LogCaptureFixture
) -> None:
    broken = {"task": "tests.schedules.tasks.missing", "every": 60}
    beside_tick("broken", broken)
    assert "Schedule failed to fire schedule=broken" in caplog.text
    assert fired("tick", "default", utc(2026, 3, 28, 12, 1))


def test_a_schedule_without_slots_is_logged_and_dropped_and_the_others_fire(
    beside_tick: BesideTick, fired: Callable[..., bool], caplog: pytest.LogCaptureFixture
) -> None:
    """A cron that does not parse is threadmill.E010, but --skip-checks lets it through: its
    CronSimError ended the supervisor, good schedules and all."""
    bad = {"task": "tests.schedules.tasks.report", "cron": "61 * * * *"}
    waits = beside_tick("bad", bad)
    assert waits == [timedelta(seconds=30), timedelta(seconds=60)]  # tick's next slots
    assert fired("tick", "default", utc(2026, 3, 28, 12, 1))
    dropped = [r for r in caplog.records if "Schedule has no slots" in r.getMessage()]
    assert [r.getMessage() for r in dropped] == [
        "Schedule has no slots and is dropped until the worker restarts schedule=bad "
        "(manage.py check names the problem: threadmill.E010)"
    ]
    assert dropped[0].exc_info is not None
    assert "Bad minute" in str(dropped[0].exc_info[1])


def test_a_cron_without_a_time_zone_under_time_zone_none_is_dropped_as_the_check_says(
    beside_tick: BesideTick, fired: Callable[..., bool], caplog: pytest.LogCaptureFixture
) -> None:
    """TIME_ZONE = None is the host's local time, which has no zone name: the check reports a
    cron without its own 'timezone' (threadmill.E010), and the scheduler fires the others."""
    local = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *"}
    waits = beside_tick("local", local, TIME_ZONE=None)
    assert waits[0] == timedelta(seconds=30)
    assert fired("tick", "default", utc(2026, 3, 28, 12, 1))
    [dropped] = [r for r in caplog.records if "Schedule has no slots" in r.getMessage()]
    assert "schedule=local" in dropped.getMessage()
    assert dropped.exc_info is not None
    assert "it sets no 'timezone' and TIME_ZONE is None" in str(dropped.exc_info[1])


def test_redis_down_raises_and_the_slot_stays_due(key_prefix: str, clock: Clock) -> None:
    down = tasks_setting("redis://127.0.0.1:1/0", key_prefix, schedules=SCHEDULES)
    with override_settings(TASKS=down):
        scheduler = Scheduler(task_backends["default"].pipeline, clock)  # type: ignore[attr-defined]
        with pytest.raises(BrokerUnavailable):
            scheduler.fire_due()
        with pytest.raises(BrokerUnavailable):  # still due: the supervisor retries it
            scheduler.fire_due()
