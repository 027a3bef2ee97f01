"""A schedule whose queue Redis refuses stays due, and the other schedules fire on."""

from datetime import UTC, datetime

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.support import HandClock

# "broken" comes first: the schedules after a refused one were never tried.
SCHEDULES = {
    "broken": {"task": "tests.schedules.tasks.report", "every": 60, "queue_name": "reports"},
    "tick": {"task": "tests.schedules.tasks.report", "every": 60},
}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": SCHEDULES}


def test_a_queue_redis_refuses_holds_back_only_its_own_schedule(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
    scheduler = Scheduler(backend.pipeline, clock)
    scheduler.fire_due()  # both new: they start with their next slot
    reports = backend.broker.queue_keys("reports").ready
    redis_client.set(reports, "not a sorted set")  # e.g. a Cluster node down: one queue fails
    slot = datetime(2026, 3, 28, 12, 1, tzinfo=UTC)
    clock.now = slot
    with pytest.raises(BrokerUnavailable, match="WRONGTYPE"):  # the supervisor retries
        scheduler.fire_due()
    tick_id = slot_task_id("default", "tick", slot_ms(slot), "default")
    assert backend.broker.record(tick_id) is not None  # not held back by "broken"
    redis_client.delete(reports)
    assert scheduler.fire_due() is not None  # "broken" stayed due: its retry fires it
    broken_id = slot_task_id("default", "broken", slot_ms(slot), "reports")
    assert backend.broker.record(broken_id) is not None
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 1  # tick once
