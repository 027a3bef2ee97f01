"""A signal receiver that raises ``asyncio.CancelledError`` of its own fails as a receiver.

In the async lane, Django 5.2's ``asend_robust`` (``asyncio.gather``) lets an ``async def``
receiver's own ``CancelledError`` through, and both versions a sync receiver's (awaited through
``sync_to_async``). Taken for the lane's cancel at the end of the grace period, it ended the
attempt unrecorded: from ``task_started``, the executor raised it, the task never ran, and the
lane counted the attempt as handed back. Run on .venv52 too: 5.2 is where an async receiver
meets it.
"""

import asyncio
import logging
from pathlib import Path
from typing import Any

import django
import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResult, task_finished, task_started
from django_threadmill.worker.executor import Executor
from tests.worker.async_tasks import nap

# The executor closes stale database connections per task, as a worker does.
pytestmark = pytest.mark.django_db

SIGNALS_LOGGER = "django_threadmill.observability.signals"
# Django 6.0's asend_robust runs async receivers in a TaskGroup, which drops a child's cancel.
ASYNC_CANCEL_DROPPED = django.VERSION >= (6, 0)


def cancels(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    raise asyncio.CancelledError


async def acancels(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    raise asyncio.CancelledError


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
@pytest.mark.parametrize("signal", [task_started, task_finished], ids=["started", "finished"])
@pytest.mark.parametrize("receiver", [cancels, acancels], ids=["sync", "async"])
def test_a_receivers_own_cancelled_error_is_logged_and_the_attempt_recorded(
    backend: ThreadmillTaskBackend,
    tasks_logger_at: None,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    signal: Any,
    receiver: Any,
) -> None:
    ran = tmp_path / "ran"
    result = nap.enqueue(0, str(ran))
    [reservation] = backend.broker.acquire("default", 1).reservations
    executor = Executor("signals-worker", backend.alias, type(backend))

    signal.connect(receiver)
    try:
        with caplog.at_level(logging.ERROR, logger=SIGNALS_LOGGER):
            finish = asyncio.run(executor.arun(reservation, now_ms()))
    finally:
        signal.disconnect(receiver)

    assert finish.outcome is Outcome.SUCCESSFUL
    assert ran.read_text().count("\n") == 1
    lines = [r.getMessage() for r in caplog.records if r.name == SIGNALS_LOGGER]
    if receiver is acancels and ASYNC_CANCEL_DROPPED:
        assert lines == []
    else:
        assert lines == [
            f"Signal not delivered to every receiver task_id={result.id}: sending it raised "
            "CancelledError"
        ]
