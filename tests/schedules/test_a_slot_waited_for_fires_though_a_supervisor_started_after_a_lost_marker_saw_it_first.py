"""A slot a running supervisor waited for fires, though a supervisor started after its marker
was lost saw the slot first and took it for a new schedule's.

Redis back empty after a restart at the slot (no persistence): a worker started then (a pod
restarted by its probe) recorded the slot without firing it, and the running supervisor, later
by its back-off, found the slot handled. The nightly task skipped a night, though a supervisor
had waited for it (docs/schedules.md, A lost marker).
"""

from collections.abc import Callable
from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import previous_slot, slot_ms
from tests.support import Command, HandClock

# Slots ten years apart (the longest every): the latest one stays the same through the test.
EVERY_S = 3650 * 86400


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": {"decade": {"task": "tests.schedules.tasks.report", "every": EVERY_S}}}


def test_the_slot_fires_once_the_running_supervisor_gets_to_it(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tasks_options: dict[str, object],
) -> None:
    schedule = backend.settings.schedules["decade"]
    slot = previous_slot(schedule, backend.broker.server_time())  # already due on Redis's clock
    clock = HandClock(slot - timedelta(seconds=30))
    running = Scheduler(backend.pipeline, clock)
    running.fire_due()  # its first look, before the slot: it waits for the slot from now on
    marker = backend.broker.queue_keys("default").fired("decade")
    redis_client.delete(marker)  # Redis restarted without persistence

    started = start_worker("--burst", options=tasks_options)  # its first pass sees the slot
    assert started.wait() == 0, started.log
    assert "Schedule fired" not in started.log  # a new schedule's first slot, to it
    clock.now = slot + timedelta(seconds=5)
    running.fire_due()

    task_id = slot_task_id("default", "decade", slot_ms(slot), "default")
    assert backend.broker.record(task_id) is not None, "the slot waited for never fired"
    assert redis_client.zrange(backend.broker.queue_keys("default").ready, 0, -1) == [task_id]
    assert backend.broker.last_fired_ms("default", "decade") == slot_ms(slot)
    Scheduler(backend.pipeline, clock).fire_due()  # a supervisor started now
    assert redis_client.zcard(backend.broker.queue_keys("default").ready) == 1  # fired once
