"""A schedule whose next slot is weeks away: the supervisor waits for it without overflowing."""

import signal
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.schedules.scheduler import LONGEST_WAIT, Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.support import Command, HandClock

EVERY_S = 60 * 86400  # past poll()'s ceiling of 2**31 - 1 ms (24.8 days)
FAR = {"task": "tests.schedules.tasks.report", "every": EVERY_S}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": {"far": FAR}}


def test_a_slot_past_the_poll_ceiling_does_not_crash_a_supervisor_that_does_not_reap(
    start_worker: Callable[..., Command], tasks_options: dict[str, object]
) -> None:
    # With --reap-interval 0 the schedule's slot was the supervisor's only timer: its first
    # wait raised OverflowError, a traceback, and the worker process ran on orphaned.
    supervisor = start_worker("--reap-interval", "0", options=tasks_options)
    supervisor.wait_for_log(r"Worker process started")
    supervisor.signal(signal.SIGTERM)

    assert supervisor.wait() == 0, supervisor.log
    assert "Traceback" not in supervisor.log


def test_a_far_slot_is_waited_for_in_steps_and_fired_when_it_comes(
    backend: ThreadmillTaskBackend,
) -> None:
    clock = HandClock(datetime(2026, 1, 1, tzinfo=UTC))
    scheduler = Scheduler(backend.pipeline, clock)
    slot = datetime.fromtimestamp(
        (slot_ms(clock.now) // (EVERY_S * 1000) + 1) * EVERY_S, UTC
    )  # the next multiple of the interval since the epoch
    assert scheduler.fire_due() == LONGEST_WAIT

    clock.now += LONGEST_WAIT  # the supervisor wakes: still weeks to go, nothing fires
    assert scheduler.fire_due() == LONGEST_WAIT
    clock.now = slot - LONGEST_WAIT / 2
    assert scheduler.fire_due() == LONGEST_WAIT / 2
    clock.now = slot
    scheduler.fire_due()

    assert backend.broker.record(slot_task_id("default", "far", slot_ms(slot), "default"))
    assert scheduler.fire_due() == LONGEST_WAIT
