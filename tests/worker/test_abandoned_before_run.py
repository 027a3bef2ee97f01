"""A sync attempt the watchdog gave up on before its task began is not run; run times are
measured on the monotonic clock; a tiny --task-timeout does not make the watchdog spin."""

import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResult, TaskResultStatus, task_started
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.watchdog import MIN_CHECK_INTERVAL_S, Watchdog
from tests.support import wait_until

from . import tasks

# The executor closes stale database connections per task, as a worker does.
pytestmark = pytest.mark.django_db

STEP_BACK_NS = 10 * 10**9  # how far the host's wall clock steps back mid-task (an NTP step)


class Recorded(logging.Handler):
    """Keep the records of one logger: the worker's logging setup stops them propagating."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def executor_log() -> Iterator[Recorded]:
    logger = logging.getLogger("django_threadmill.worker.executor")
    handler, level = Recorded(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.usefixtures("logging_put_back")
def test_an_attempt_timed_out_in_its_task_started_receivers_is_not_run(
    backend: ThreadmillTaskBackend, tmp_path: Path, executor_log: Recorded
) -> None:
    """The watchdog's clock starts before task_started is sent: an attempt whose receivers
    ran past --task-timeout was recorded FAILED, yet its abandoned thread then ran the task."""
    marker = tmp_path / "ran"
    stuck = tasks.count_run.enqueue(str(marker), 1)
    released = threading.Event()

    def slow_receiver(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        if task_result.id == stuck.id:
            released.wait(30)  # held until the test saw the attempt recorded FAILED

    task_started.connect(slow_receiver)
    try:
        call_command(
            "threadmill_worker",
            *("--processes", "0", "--burst", "--threads", "1", "--task-timeout", "0.2"),
            *("--verbosity", "0"),
        )
        assert backend.get_result(stuck.id).status == TaskResultStatus.FAILED
        [abandoned] = [t for t in threading.enumerate() if t.name == "threadmill-worker-1"]
        released.set()
        skipped = f"Skipped task the watchdog timed out before it began task_id={stuck.id}"
        wait_until(
            lambda: marker.exists() or any(skipped in line for line in executor_log.lines),
            "the abandoned thread running the task or logging that it did not",
        )
        abandoned.join(30)
        assert not abandoned.is_alive()
    finally:
        released.set()
        task_started.disconnect(slow_receiver)
    assert not marker.exists()
    assert any(skipped in line for line in executor_log.lines), executor_log.lines
    assert backend.get_result(stuck.id).status == TaskResultStatus.FAILED


def test_run_time_is_measured_on_the_monotonic_clock(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch, executor_log: Recorded
) -> None:
    """Taken from the wall clock, a step back during the task made the -v 2 line's duration_ms
    negative and counted the attempt in the metrics' fastest bucket with no run time."""
    tasks.work_for.enqueue(0.05)
    [reservation] = backend.broker.acquire("default", 1).reservations
    started_ms = now_ms()
    stepped_back = SimpleNamespace(time_ns=lambda: time.time_ns() - STEP_BACK_NS)
    monkeypatch.setattr("django_threadmill.codec.times.time", stepped_back)

    finish = Executor("clock-worker", backend.alias, type(backend)).run(reservation, started_ms)

    assert finish is not None
    assert finish.finished_ms < finish.started_ms  # the wall clock, for display, stepped back
    [line] = [line for line in executor_log.lines if line.startswith("Task succeeded")]
    duration = re.search(r"duration_ms=(-?\d+)", line)
    assert duration is not None
    assert int(duration.group(1)) >= 50, line
    monkeypatch.undo()
    assert backend.broker.finish("clock-worker", [finish]) == []
    backend.broker.send_metrics()
    counted = backend.broker.client.hgetall(backend.broker.queue_keys("default").metrics)
    assert int(counted[f"{tasks.work_for.module_path}|run_ms"]) >= 50


class RecordedStop(threading.Event):
    """A stop event that records how long the loop waits, and stops it after one round."""

    def __init__(self) -> None:
        super().__init__()
        self.waits_s: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits_s.append(timeout)
        return True


def test_a_tiny_task_timeout_does_not_make_the_watchdog_spin() -> None:
    """--task-timeout 1e-6 checked every 0.25 µs: the watchdog took a CPU to itself."""
    unused: Any = None  # no thread runs a task, so nothing is timed out, written or counted
    watchdog = Watchdog(
        1e-6,
        [],
        abandon=lambda thread, timeout_s, *, replace: None,
        executor=unused,
        writer=unused,
        buffer=unused,
        on_task_done=lambda: None,
        on_crash=lambda: None,
    )
    watchdog.stopping = RecordedStop()
    watchdog.loop()
    assert watchdog.stopping.waits_s == [MIN_CHECK_INTERVAL_S]
    assert MIN_CHECK_INTERVAL_S == 0.01
