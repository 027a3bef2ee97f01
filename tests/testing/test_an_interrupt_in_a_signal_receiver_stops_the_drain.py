"""An interrupt raised while a ``task_started`` or ``task_finished`` receiver runs in a drain
(Ctrl-C, pytest-timeout's failure with its ``signal`` method) reaches the test, as one raised
while the task itself runs does.

The sends were guarded as a worker thread's are: the interrupt was logged as a receiver's
failure ("Signal not delivered to every receiver … raised Interrupt") and the drain ran on, so
a test whose time ran out in a slow receiver went on past its timeout. The task cut short is
left as one cut short in its own code is: RUNNING, its lease to lapse (docs/testing.md).
"""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.dispatch import Signal

from django_threadmill.compat import (
    Task,
    TaskResult,
    TaskResultStatus,
    task,
    task_finished,
    task_started,
)
from django_threadmill.testing import Threadmill

from . import tasks


@task
async def arecord(label: str) -> None:
    """The ``async def`` twin of ``tasks.record``."""
    tasks.runs.append((label, time.monotonic()))


@pytest.fixture(params=[task_started, task_finished], ids=["task_started", "task_finished"])
def interrupting_receiver(request: pytest.FixtureRequest) -> Iterator[None]:
    """A receiver of the signal the test is parametrised with, cut short by the test's
    timeout while it runs for the task ``record("cut short")``."""

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if task_result.args == ["cut short"]:
            raise tasks.Interrupt("the test ran out of time")

    signal: Signal = request.param
    signal.connect(receiver)
    yield
    signal.disconnect(receiver)


@pytest.mark.parametrize("first", [tasks.record, arecord], ids=["sync", "async"])
def test_an_interrupt_in_a_receiver_reaches_the_caller_unrecorded(
    threadmill: Threadmill, interrupting_receiver: None, first: Task
) -> None:
    cut_short = first.enqueue("cut short")
    with pytest.raises(tasks.Interrupt, match="the test ran out of time"):
        threadmill.drain()
    cut_short.refresh()
    assert cut_short.status == TaskResultStatus.RUNNING  # no outcome: its lease will lapse
