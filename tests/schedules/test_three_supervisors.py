"""Three supervisors fire an every=1s schedule together: every slot is enqueued exactly once."""

import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.schedules.scheduler import slot_task_id
from tests.support import Command, wait_until

SLOTS = 10  # one per second: the run lasts about ten seconds
RESULT_TTL_S = 1  # finished slots expire during the run, so the last-fired marker must hold


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "ticks.log"


@pytest.fixture
def tasks_options(log: Path) -> dict[str, object]:
    tick = {"task": "tests.schedules.tasks.tick", "every": 1, "kwargs": {"log_path": str(log)}}
    return {"schedules": {"tick": tick}, "result_ttl": RESULT_TTL_S}


def test_every_slot_is_enqueued_once_by_three_supervisors(
    start_worker: Callable[..., Command], tasks_options: dict[str, object], log: Path
) -> None:
    began = int(time.time())
    supervisors = [start_worker("--threads", "2", options=tasks_options) for _ in range(3)]
    ran = lambda: log.read_text().splitlines() if log.exists() else []  # noqa: E731
    wait_until(lambda: len(ran()) >= SLOTS, f"{SLOTS} slots ran", 60)
    for supervisor in supervisors:
        supervisor.signal(signal.SIGTERM)
    for supervisor in supervisors:
        assert supervisor.wait() == 0, supervisor.log
    # A slot fired just before the stop may still wait: run it, without schedules this time.
    drain = start_worker("--burst", options={"result_ttl": RESULT_TTL_S})
    assert drain.wait() == 0, drain.log

    ids = ran()
    assert len(ids) == len(set(ids)), "a slot ran twice"
    slot_of = {
        slot_task_id("default", "tick", second * 1000, "default"): second
        for second in range(began - 5, int(time.time()) + 5)
    }
    slots = sorted(slot_of[task_id] for task_id in ids)
    assert slots == list(range(slots[0], slots[-1] + 1)), "a slot is missing"
    fired = sum(len(re.findall(r"Schedule fired schedule=tick", s.log)) for s in supervisors)
    assert fired == len(slots)  # each slot fired by exactly one supervisor
