"""A task that ended before a stop, its ``task_finished`` receiver still working when the grace
period ends, keeps the outcome the receiver heard, in either lane.

A worker thread's outcome was handed to the ack writer only once its receivers returned: a
receiver past the grace period (a slow webhook during a deploy) left the task RUNNING, and the
reaper then failed it with ``LeaseExpired`` or ran it again, though it had succeeded. The event
loop's receivers were cut short and the outcome recorded.
"""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import Task, TaskResultStatus
from tests.support import Command, wait_until
from tests.worker import slow_receiver_tasks


@pytest.mark.parametrize(
    ("task", "status"),
    [
        (slow_receiver_tasks.returns, TaskResultStatus.SUCCESSFUL),
        (slow_receiver_tasks.raises, TaskResultStatus.FAILED),
        (slow_receiver_tasks.areturns, TaskResultStatus.SUCCESSFUL),
    ],
    ids=["thread-success", "thread-failure", "event-loop"],
)
def test_the_outcome_a_receiver_heard_is_recorded_when_the_stop_ends_it(
    tmp_path: Path,
    start_worker: Callable[..., Command],
    task: Task,
    status: TaskResultStatus,
) -> None:
    marker = tmp_path / "heard"
    result = task.enqueue(str(marker))
    worker = start_worker("--threads", "1", "--grace-period", "0.5")
    wait_until(marker.exists, "the task_finished receiver began")
    assert marker.read_text() == status

    worker.signal(signal.SIGTERM)
    worker.wait(30)

    result.refresh()
    assert result.status == status, worker.log
    assert "Stopped with work left to the reaper" not in worker.log
