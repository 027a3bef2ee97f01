"""A schedule whose task's module raises SystemExit as it is imported (a module that runs a
script's ``parse_args()`` at import): under ``--skip-checks`` the scheduler logs it at each slot
and fires the others, as it does for any task that fails to import (docs/schedules.md, Checks)."""

import signal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from tests.conftest import tasks_setting
from tests.support import Command, HandClock

TICK = {"task": "tests.schedules.tasks.report", "every": 60}
EXITS = {"task": "tests.exits_at_import.task", "every": 60}


def test_a_task_module_that_exits_at_import_is_logged_and_the_others_fire(
    redis_url: str, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = HandClock(datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC))
    options = {"schedules": {"exits": EXITS, "tick": TICK}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **options)):
        backend = task_backends["default"]
        scheduler = Scheduler(backend.pipeline, clock)  # type: ignore[attr-defined]
        assert scheduler.fire_due() == timedelta(seconds=30)
        clock.now += timedelta(seconds=30)
        assert scheduler.fire_due() == timedelta(seconds=60)

        slot = datetime(2026, 3, 28, 12, 1, tzinfo=UTC)
        tick_id = slot_task_id("default", "tick", slot_ms(slot), "default")
        assert backend.broker.record(tick_id) is not None  # type: ignore[attr-defined]
    failed = [r for r in caplog.records if "Schedule failed to fire" in r.getMessage()]
    assert [r.getMessage() for r in failed] == ["Schedule failed to fire schedule=exits"] * 2
    assert isinstance(failed[0].exc_info and failed[0].exc_info[1], SystemExit)


def test_a_supervisor_started_with_skip_checks_runs_on(
    start_worker: Callable[..., Command],
) -> None:
    # The SystemExit left the supervisor's loop: the command ended with exit code 2, no log line.
    options = {"schedules": {"exits": EXITS}}
    supervisor = start_worker("--skip-checks", "--processes", "1", options=options)
    supervisor.wait_for_log(r"Schedule failed to fire schedule=exits")
    supervisor.wait_for_log(r"Worker process started")
    supervisor.signal(signal.SIGTERM)

    assert supervisor.wait() == 0, supervisor.log
