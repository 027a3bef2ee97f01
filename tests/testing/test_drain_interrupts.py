"""An interrupt while drain() runs a task (Ctrl-C, a test framework's timeout) reaches the test.

A worker records every exception a task raises; the drain once did too, so pytest-timeout's
failure became the task's error and the test passed, and one raised while async tasks ran hung
the drain for good (their loop waited for the interrupted thread).
"""

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import Threadmill

from . import tasks


def test_an_interrupt_in_a_sync_task_reaches_the_caller_and_the_rest_go_back(
    threadmill: Threadmill,
) -> None:
    cut_short = tasks.interrupted.enqueue()
    waiting = tasks.record.enqueue("after")
    with pytest.raises(tasks.Interrupt, match="the test ran out of time"):
        threadmill.drain()
    waiting.refresh()
    assert waiting.status == TaskResultStatus.READY  # handed back, not run
    cut_short.refresh()
    assert cut_short.status == TaskResultStatus.RUNNING  # no outcome: its lease will lapse
    assert tasks.runs == []


@pytest.fixture
def interrupting_handler() -> Iterator[None]:
    """SIGUSR1 raises in the test's thread, as pytest-timeout's SIGALRM handler does."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise tasks.Interrupt("the test ran out of time")

    previous = signal.signal(signal.SIGUSR1, interrupt)
    yield
    signal.signal(signal.SIGUSR1, previous)


def test_an_interrupt_while_async_tasks_run_reaches_the_caller(
    threadmill: Threadmill, interrupting_handler: None
) -> None:
    awaiting = tasks.awaits_past_an_interrupt.enqueue()
    with pytest.raises(tasks.Interrupt, match="the test ran out of time"):
        threadmill.drain()
    awaiting.refresh()
    assert awaiting.status == TaskResultStatus.RUNNING  # cancelled and handed back unrecorded
