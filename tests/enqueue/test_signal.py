"""task_enqueued: sent whenever something can hear it, skipped otherwise."""

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TASKS_LOGGER_NAME, TaskResult, task_enqueued
from testproject.example.tasks import echo

Burst = Callable[[int], list[TaskResult]]


def thread_burst(count: int) -> list[TaskResult]:
    return [echo.enqueue(n) for n in range(count)]


def loop_burst(count: int) -> list[TaskResult]:
    async def together() -> list[TaskResult]:
        return await asyncio.gather(*(echo.aenqueue(n) for n in range(count)))

    return asyncio.run(together())


@pytest.fixture(params=[thread_burst, loop_burst], ids=["enqueue", "aenqueue"])
def burst(request: pytest.FixtureRequest) -> Burst:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each send of task_enqueued, whoever receives it."""
    sent: list[str] = []
    original = task_enqueued.send

    def counted(sender: type, **named: Any) -> Any:
        sent.append(named["task_result"].id)
        return original(sender, **named)

    monkeypatch.setattr(task_enqueued, "send", counted)
    return sent


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_with_only_djangos_quiet_log_receiver_nothing_is_sent(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, sends: list[str], burst: Burst
) -> None:
    results = burst(3)
    assert sends == []
    assert len({backend.get_result(r.id).id for r in results}) == 3  # stored all the same


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
def test_a_project_receiver_gets_every_result(
    backend: ThreadmillTaskBackend, tasks_logger_at: None, sends: list[str], burst: Burst
) -> None:
    seen: list[TaskResult] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result)

    task_enqueued.connect(receiver)
    try:
        results = burst(3)
    finally:
        task_enqueued.disconnect(receiver)
    assert sorted(sends) == sorted(r.id for r in results)
    assert sorted(r.id for r in seen) == sorted(r.id for r in results)


@pytest.mark.parametrize("tasks_logger_at", [logging.DEBUG], indirect=True)
def test_a_logger_that_prints_debug_gets_djangos_line(
    tasks_logger_at: None, caplog: pytest.LogCaptureFixture, burst: Burst
) -> None:
    with caplog.at_level(logging.DEBUG, logger=TASKS_LOGGER_NAME):
        results = burst(2)
    lines = [r.getMessage() for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert [f"id={r.id} " in line for r, line in zip(results, lines, strict=True)] == [True, True]
