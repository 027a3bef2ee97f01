"""Under --skip-checks, a schedule whose task is bound to another backend (threadmill.E011)
fires nothing, as threadmill_schedules lists it ("never fires"), and the others fire on."""

import io
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis
from django.core.management import call_command
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.conftest import tasks_setting
from tests.support import HandClock, close_pipelines

ELSEWHERE = "tests.schedules.other_backend_tasks.report_elsewhere"
SCHEDULES = {
    "elsewhere": {"task": ELSEWHERE, "every": 60},
    "tick": {"task": "tests.schedules.tasks.report", "every": 60},
}


@pytest.fixture(autouse=True)
def two_backends(redis_url: str, key_prefix: str) -> Iterator[None]:
    """Backend "default" with the schedules, and "other", the backend of ELSEWHERE's task."""
    tasks = tasks_setting(redis_url, key_prefix, schedules=SCHEDULES)
    tasks["other"] = {
        **tasks["default"],  # type: ignore[dict-item]
        "OPTIONS": {"key_prefix": f"{key_prefix}-o"},
    }
    with override_settings(TASKS=tasks):
        yield
    close_pipelines(f"{key_prefix}-o")


def test_its_slots_fire_nowhere_and_it_is_logged_once_with_the_fix(
    key_prefix: str, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """It was enqueued through this backend anyway, each slot, though the listing said it
    never fires."""
    clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
    backend = task_backends["default"]
    assert isinstance(backend, ThreadmillTaskBackend)
    scheduler = Scheduler(backend.pipeline, clock)
    scheduler.fire_due()
    for minute in (1, 2):
        clock.now = datetime(2026, 3, 28, 12, minute, tzinfo=UTC)
        scheduler.fire_due()
        slot = slot_ms(clock.now)
        assert backend.broker.record(slot_task_id("default", "tick", slot, "default"))
        assert not backend.broker.record(slot_task_id("default", "elsewhere", slot, "default"))
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 2  # tick's
    assert not list(redis_client.scan_iter(f"{key_prefix}-o:*"))  # nor through "other"
    assert backend.broker.last_fired_ms("default", "elsewhere") is None
    dropped = [r for r in caplog.records if "schedule=elsewhere" in r.getMessage()]
    assert [(r.levelname, r.getMessage()) for r in dropped] == [
        (
            "ERROR",
            "Schedule is dropped until the worker restarts schedule=elsewhere (task "
            f"{ELSEWHERE!r} is bound to backend 'other', not 'default': manage.py check "
            "reports it as threadmill.E011). Point its 'task' at a @task bound to backend "
            "'default', or move the schedule to TASKS['other']['OPTIONS']['schedules'].",
        )
    ]


def test_the_listing_says_it_never_fires_and_lists_the_others() -> None:
    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    elsewhere, tick = out.getvalue().splitlines()
    assert elsewhere == (
        f"elsewhere  every 0:01:00  task={ELSEWHERE}  never fires: task {ELSEWHERE!r} is bound "
        "to backend 'other', not 'default'. manage.py check names the fix."
    )
    assert tick.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")
