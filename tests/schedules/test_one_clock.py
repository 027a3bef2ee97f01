"""Schedule slots are decided on the Redis clock: a supervisor whose own clock runs a minute
ahead fires no slot early (docs/design.md, One clock)."""

import re
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from django_threadmill.broker import Broker
from tests.support import Command, run_to_completion

SKEW_S = 60
SCHEDULES = {"tick": {"task": "tests.schedules.tasks.report", "every": 1}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": SCHEDULES}


def skewed_env(directory: Path, skew_s: float) -> dict[str, str]:
    """Return the environment of a process whose wall clock runs ``skew_s`` seconds ahead."""
    shutil.copy(Path(__file__).with_name("skewed_clock.py"), directory / "sitecustomize.py")
    return {"PYTHONPATH": str(directory), "THREADMILL_TEST_CLOCK_SKEW_S": str(skew_s)}


def test_a_supervisor_whose_clock_runs_a_minute_ahead_fires_no_slot_early(
    start_worker: Callable[..., Command],
    tasks_options: dict[str, object],
    broker: Broker,
    tmp_path: Path,
) -> None:
    supervisor = start_worker(options=tasks_options, extra_env=skewed_env(tmp_path, SKEW_S))
    supervisor.wait_for_log(r"(?s)(Schedule fired schedule=tick.*){2}")
    now_ms = broker.server_time_ms()
    supervisor.signal()
    assert supervisor.wait() == 0, supervisor.log

    slots = re.findall(r"Schedule fired schedule=tick slot=(\S+)", supervisor.log)
    assert all(datetime.fromisoformat(slot).timestamp() * 1000 <= now_ms for slot in slots), (
        slots,
        now_ms,
    )
    last_fired_ms = broker.last_fired_ms("default", "tick")
    assert last_fired_ms is not None
    assert last_fired_ms <= now_ms


def test_threadmill_schedules_shows_next_slots_on_the_redis_clock(
    redis_url: str, key_prefix: str, broker: Broker, tmp_path: Path
) -> None:
    hourly = {"hourly": {"task": "tests.schedules.tasks.report", "every": 3600}}
    skewed = skewed_env(tmp_path, 3600)  # an hour ahead: its own next slot is an hour late

    def next_hour() -> datetime:
        return broker.server_time().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)

    before = next_hour()
    log = run_to_completion(
        Command(redis_url, key_prefix, "threadmill_schedules", options={"schedules": hourly},
                extra_env=skewed)
    )  # fmt: skip
    slots = {f"next={slot.isoformat()}" for slot in (before, next_hour())}
    assert any(slot in log for slot in slots), log
