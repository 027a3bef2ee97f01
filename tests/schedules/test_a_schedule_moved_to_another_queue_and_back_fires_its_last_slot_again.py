"""A schedule moved to another queue and back (a deploy rolled back), or renamed and back,
fires the last slot it fired meanwhile once more: the old queue's (or name's) fired marker is
from before the move, and a script reads one queue's keys only (docs/design.md). Deleting that
marker before moving back makes it start with its next slot (docs/schedules.md, Moving a
schedule to another queue)."""

from datetime import UTC, datetime

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.conftest import tasks_setting
from tests.support import HandClock

REPORT = "tests.schedules.tasks.report"


def deploy(
    redis_url: str, key_prefix: str, clock: HandClock[datetime], name: str, queue: str
) -> ThreadmillTaskBackend:
    """Start a supervisor of a version whose schedule ``name`` fires every minute to ``queue``,
    as the deploy's first one sees it; return the backend."""
    schedules = {name: {"task": REPORT, "every": 60, "queue_name": queue}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules=schedules)):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        Scheduler(backend.pipeline, clock).fire_due()
        return backend


def fired_in(backend: ThreadmillTaskBackend, name: str, queue: str, at: datetime) -> bool:
    return backend.broker.record(slot_task_id("default", name, slot_ms(at), queue)) is not None


@pytest.mark.parametrize(
    ("moved", "back"),
    [(("tick", "reports"), ("tick", "emails")), (("tock", "emails"), ("tick", "emails"))],
    ids=["queue", "name"],
)
def test_moved_back_it_fires_its_last_slot_again(
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    moved: tuple[str, str],
    back: tuple[str, str],
) -> None:
    clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
    deploy(redis_url, key_prefix, clock, "tick", "emails")  # a new schedule: fires nothing
    clock.now = datetime(2026, 3, 28, 12, 1, 10, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, "tick", "emails")  # fires 12:01, marker 12:01
    clock.now = datetime(2026, 3, 28, 12, 1, 20, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, *moved)  # new here: 12:01 recorded, not fired
    clock.now = datetime(2026, 3, 28, 12, 2, 10, tzinfo=UTC)
    backend = deploy(redis_url, key_prefix, clock, *moved)  # fires 12:02 there
    twelve_two = datetime(2026, 3, 28, 12, 2, tzinfo=UTC)
    assert fired_in(backend, *moved, twelve_two)
    clock.now = datetime(2026, 3, 28, 12, 2, 20, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, *back)  # rolled back within the same minute
    assert fired_in(backend, *back, twelve_two)  # 12:02 a second time: a missed slot to it


def test_with_the_old_marker_deleted_it_starts_with_its_next_slot(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
    deploy(redis_url, key_prefix, clock, "tick", "emails")
    clock.now = datetime(2026, 3, 28, 12, 1, 10, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, "tick", "emails")
    clock.now = datetime(2026, 3, 28, 12, 2, 10, tzinfo=UTC)
    backend = deploy(redis_url, key_prefix, clock, "tick", "reports")  # the move
    clock.now = datetime(2026, 3, 28, 12, 3, 10, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, "tick", "reports")  # fires 12:03 there
    assert redis_client.delete(f"{key_prefix}:{{default:emails}}:fired:tick") == 1
    clock.now = datetime(2026, 3, 28, 12, 3, 20, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, "tick", "emails")  # the rollback
    assert not fired_in(backend, "tick", "emails", datetime(2026, 3, 28, 12, 3, tzinfo=UTC))
    clock.now = datetime(2026, 3, 28, 12, 4, 10, tzinfo=UTC)
    deploy(redis_url, key_prefix, clock, "tick", "emails")
    assert fired_in(backend, "tick", "emails", datetime(2026, 3, 28, 12, 4, tzinfo=UTC))
