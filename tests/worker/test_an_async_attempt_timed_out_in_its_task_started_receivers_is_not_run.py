"""``--task-timeout``'s clock starts before ``task_started`` is sent, for an ``async def`` task
as for a thread's: an attempt whose receivers ran past it is recorded FAILED with
``TaskTimeout``, and its task is not run.

The event loop started the clock only once the receivers returned: a receiver that took longer
than the timeout (a slow audit write) ran the task anyway, with its whole timeout still to go,
where a worker thread's watchdog recorded the attempt FAILED and skipped the task.
"""

import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_started
from django_threadmill.exceptions import TaskTimeout
from tests.worker import slow_receiver_tasks

# The worker closes stale database connections per task.
pytestmark = pytest.mark.django_db

TASK_TIMEOUT_S = 0.2
RECEIVER_S = 1.0  # the receiver's own work, past the timeout


@pytest.mark.usefixtures("logging_put_back")
def test_an_async_attempt_whose_receivers_outlast_the_timeout_fails_unrun(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    late = slow_receiver_tasks.amarks.enqueue(str(marker))

    def slow_receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        if task_result.id == late.id:
            time.sleep(RECEIVER_S)  # the receiver's own work, not test synchronisation

    task_started.connect(slow_receiver)
    try:
        call_command(
            "threadmill_worker",
            *("--processes", "0", "--burst", "--task-timeout", str(TASK_TIMEOUT_S)),
            *("--verbosity", "0"),
        )
    finally:
        task_started.disconnect(slow_receiver)

    result = backend.get_result(late.id)
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class for error in result.errors] == [TaskTimeout]
    assert not marker.exists()
