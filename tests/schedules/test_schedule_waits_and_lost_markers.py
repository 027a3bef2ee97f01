"""A suspended host fires a slot soon after it resumes; a lost fired marker skips no slot."""

from datetime import UTC, datetime, timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.support import HandClock

Clock = HandClock[datetime]
START = datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC)
NIGHTLY = datetime(2026, 3, 29, 3, 0, tzinfo=UTC)  # the first slot after START
DAY = timedelta(days=1)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    nightly = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *", "timezone": "UTC"}
    return {"schedules": {"nightly": nightly}}


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


def fired(backend: ThreadmillTaskBackend, schedule: str, slot: datetime) -> bool:
    task_id = slot_task_id("default", schedule, slot_ms(slot), "default")
    return backend.broker.record(task_id) is not None


def fired_after_resume(
    backend: ThreadmillTaskBackend, clock: Clock, suspend_after: timedelta, suspended: timedelta
) -> timedelta:
    """Run one supervisor's schedule loop until "nightly" fires; return how long after the
    host's resume it fired, on the Redis clock.

    The loop sleeps each wait ``fire_due`` returns, as the supervisor does on the monotonic
    clock, which stands still while the host is suspended: the sleep that spans
    ``suspend_after`` (monotonic time since the start) takes ``suspended`` longer on the Redis
    clock.
    """
    scheduler = Scheduler(backend.pipeline, clock)
    slept = timedelta(0)
    resumed = START + suspend_after + suspended
    while (wait := scheduler.fire_due()) is not None and not fired(backend, "nightly", NIGHTLY):
        clock.now += wait
        if slept < suspend_after <= slept + wait:
            clock.now += suspended
        slept += wait
    assert fired(backend, "nightly", NIGHTLY)
    assert clock.now >= resumed, "the slot fired before the suspend"
    return clock.now - resumed


def test_a_slot_due_while_the_host_was_suspended_fires_within_a_minute_of_the_resume(
    backend: ThreadmillTaskBackend, clock: Clock
) -> None:
    """Suspended at 12:00:40 until 03:30:40, the supervisor then slept out the rest of the
    hour's wait it began before the suspend: the 03:00 slot fired at 04:30:30."""
    late = fired_after_resume(backend, clock, timedelta(seconds=10), timedelta(hours=15.5))

    assert late <= timedelta(minutes=1)


def lose_marker(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> None:
    """Delete the schedule's fired marker, as FLUSHDB or a Redis restarted without
    persistence does."""
    redis_client.delete(backend.broker.queue_keys("default").fired("nightly"))


def test_a_running_supervisor_fires_the_next_slot_after_its_marker_is_lost(
    backend: ThreadmillTaskBackend, clock: Clock, redis_client: redis.Redis
) -> None:
    """The slot the supervisor was waiting for looked like a new schedule's first: it was
    recorded and not fired, so the nightly task skipped a night."""
    supervisors = [Scheduler(backend.pipeline, clock) for _ in range(2)]  # both fire each slot
    for at in (START, NIGHTLY):
        clock.now = at
        for scheduler in supervisors:
            scheduler.fire_due()
    lose_marker(backend, redis_client)

    clock.now = NIGHTLY + DAY
    for scheduler in supervisors:
        scheduler.fire_due()

    assert fired(backend, "nightly", NIGHTLY + DAY)
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 2  # each slot once
    assert backend.broker.last_fired_ms("default", "nightly") == slot_ms(NIGHTLY + DAY)


def test_a_supervisor_started_after_the_marker_is_lost_treats_the_schedule_as_new(
    backend: ThreadmillTaskBackend, clock: Clock, redis_client: redis.Redis
) -> None:
    """Redis cannot tell a lost marker from none: the past slot is not caught up, the next
    one fires."""
    Scheduler(backend.pipeline, clock).fire_due()
    lose_marker(backend, redis_client)
    clock.now = NIGHTLY + timedelta(hours=1)
    scheduler = Scheduler(backend.pipeline, clock)

    scheduler.fire_due()
    assert not fired(backend, "nightly", NIGHTLY)
    clock.now = NIGHTLY + DAY
    scheduler.fire_due()
    assert fired(backend, "nightly", NIGHTLY + DAY)
