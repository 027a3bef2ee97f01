"""Whom the loop monitor names when the event loop misses its beat.

The monitor runs against a stand-in lane on a clock the test moves, so each stall is exactly the
one described: the tasks the loop is seen running, in turn, and how long each was seen.
"""

import logging
import re
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from django_threadmill.worker import event_loop
from django_threadmill.worker.event_loop import LoopMonitor

SAMPLE_S = 0.005  # how far the clock moves between two looks at the loop


class StalledLane:
    """A lane whose loop last beat at 0 and turns once every culprit in ``seen`` was looked at."""

    def __init__(self, clock: SimpleNamespace, seen: list[str]) -> None:
        self.clock = clock
        self.busy = threading.Event()
        self.busy.set()
        self.last_beat = 0.0
        self._seen: Iterator[str] = iter(seen)

    def cpu_s(self) -> None:
        return None  # no CPU clock of its thread: the monitor judges by its own wakes alone

    def blocked_task(self) -> SimpleNamespace | None:
        self.clock.now += SAMPLE_S
        task_id = next(self._seen, None)
        if task_id is None:
            self.last_beat = self.clock.now  # the loop turned
            return None
        return _reservation(task_id)


_reservations: dict[str, SimpleNamespace] = {}


def _reservation(task_id: str) -> SimpleNamespace:
    """One object per task, as the lane hands the monitor the reservation it runs."""
    lease = SimpleNamespace(task_id=task_id, task_path=f"tests.{task_id}")
    return _reservations.setdefault(task_id, SimpleNamespace(lease=lease))


class Waits:
    """The monitor's ``stopping``: each wait takes ``late_s`` longer than asked on the test's
    clock (the monitor waiting for the CPU), and nothing stops it."""

    def __init__(self, clock: SimpleNamespace, late_s: float) -> None:
        self.clock, self.late_s = clock, late_s

    def wait(self, timeout: float) -> bool:
        self.clock.now += timeout + self.late_s
        return False


def follow(
    monkeypatch: pytest.MonkeyPatch, seen: list[str], noticed_at: float, late_s: float = 0.0
) -> None:
    """Let the monitor follow a stall it noticed at ``noticed_at`` s after the last beat."""
    clock = SimpleNamespace(now=noticed_at)
    monkeypatch.setattr(event_loop, "time", SimpleNamespace(monotonic=lambda: clock.now))
    monkeypatch.setattr(event_loop, "BEAT_S", 0.0)  # the looks are SAMPLE_S apart
    monitor = LoopMonitor(StalledLane(clock, seen), on_crash=lambda: None)  # type: ignore[arg-type]
    monitor.stopping = Waits(clock, late_s)  # type: ignore[assignment]
    monitor._follow_stall()


def warned(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int]]:
    """The task named and the milliseconds given by each blocked-loop warning."""
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    named = [
        re.match(r"Event loop blocked task_id=(\S+) path=\S+ for_ms=(\d+)", w) for w in warnings
    ]
    assert all(named), warnings
    return [(match[1], int(match[2])) for match in named if match]


def test_many_tasks_started_on_one_turn_are_not_taken_for_a_blocking_call(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Hundreds of tasks started together (--async-concurrency 500 at start) hold the loop a
    moment each: the first one seen was credited with the whole stall and named as blocking.
    One seen for 30 ms (the loop's thread waiting for the GIL) is not named either."""
    caplog.set_level(logging.DEBUG, logger=event_loop.__name__)
    follow(monkeypatch, ["t0"] * 6 + [f"t{n}" for n in range(1, 20)], noticed_at=0.15)
    assert warned(caplog) == []
    [busy] = [r.getMessage() for r in caplog.records if "Event loop busy" in r.getMessage()]
    assert "tasks=20 in turn" in busy


def test_one_task_seen_holding_the_loop_is_named_with_the_whole_stall(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    follow(monkeypatch, ["sleeper"] * 10, noticed_at=0.15)
    [(task_id, held_ms)] = warned(caplog)
    # From the last beat (0) to the turn: noticed at 150 ms, then 11 looks of 5 ms.
    assert task_id == "sleeper"
    assert abs(held_ms - 205) <= 1


def test_tasks_each_blocking_a_while_in_turn_name_the_longest(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Five tasks each calling time.sleep(0.06) on one turn: none held the loop 100 ms, the
    stall is theirs; the one seen longest is named."""
    seen = [name for name in ("a", "b", "c", "d", "e") for _ in range(14 if name == "c" else 12)]
    follow(monkeypatch, seen, noticed_at=0.12)
    [(task_id, held_ms)] = warned(caplog)
    assert task_id == "c"
    assert abs(held_ms - 70) <= 1


def test_a_stall_the_monitor_itself_woke_late_through_names_no_task(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A process short of CPU (a CPU quota, a busy host) stalls the loop whichever task is
    current: that task was named as blocking it."""
    caplog.set_level(logging.DEBUG, logger=event_loop.__name__)
    follow(monkeypatch, ["innocent"] * 10, noticed_at=0.15, late_s=0.02)
    assert warned(caplog) == []
    assert any("while its monitor woke late_ms=" in r.getMessage() for r in caplog.records)
