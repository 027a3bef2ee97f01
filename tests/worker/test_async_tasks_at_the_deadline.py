"""An async task that ends just as the grace period does is recorded, never handed back
(docs/worker.md, Shutdown).

At the deadline the event loop lane cancels what it still runs, and a cancelled attempt is
handed back unrecorded: its lease lapses and the reaper settles it (FAILED LeaseExpired, or run
again). A coroutine that had returned before the cancel reached it was handed back all the
same whenever its attempt still awaited something: under --task-timeout (the wait on the task
of its own it runs in), an async task_finished receiver, or the --sync-ack wait for the write.
It ran to its end, then was left to the reaper. Each test holds the task at its very end until
the lane's cancel is queued, so the cancel comes on the loop's next turn: no timing involved.
"""

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultStatus, task_finished
from django_threadmill.worker.exit_codes import ExitCode
from django_threadmill.worker.process import WorkerProcess

from . import deadline_tasks
from .support import worker_options

WAIT_S = 30.0  # a bound on each wait for the worker, never reached when the test passes


@pytest.fixture(autouse=True)
def events_cleared() -> Iterator[None]:
    for event in (
        deadline_tasks.at_the_end,
        deadline_tasks.cancel_queued,
        deadline_tasks.in_receiver,
    ):
        event.clear()
    yield
    deadline_tasks.cancel_queued.set()  # a failed test must not leave the loop held


@pytest.fixture
def receiver_awaiting() -> Iterator[None]:
    task_finished.connect(deadline_tasks.awaits_for_ever, weak=False)
    yield
    task_finished.disconnect(deadline_tasks.awaits_for_ever)


def stopped_at_the_end(
    backend: ThreadmillTaskBackend, task: Task, at_the_end: threading.Event, **options: object
) -> WorkerProcess:
    """Run ``task`` in an in-process worker; once it stands at ``at_the_end``, queue the lane's
    cancel (the grace period is over), let the task go on, and stop the process."""
    result = task.enqueue()
    process = WorkerProcess(worker_options(grace_period_s=0.0, **options), backend)
    try:
        assert process._start_threads()
        assert at_the_end.wait(WAIT_S), "the task never got to its end"
        lane = process.crew.lane
        lane.stop()
        lane.finish_running(time.monotonic())  # the deadline passed: the cancel is queued
        deadline_tasks.cancel_queued.set()
        lane.join(WAIT_S)
        assert not lane.is_alive()
    finally:
        process.stop()
        process._wakeup.close()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL  # not RUNNING: handed back
    assert result.return_value == "done"
    return process


# django.tasks quiet: no task_finished receiver is heard, so each case meets its own await, and
# "plain" none: its task ends on the cancel's turn, listed still, and was counted handed back.
@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True, ids=["unheard"])
@pytest.mark.parametrize(
    "options",
    [{}, {"task_timeout_s": 60.0}, {"sync_ack": True}],
    ids=["plain", "task-timeout", "sync-ack"],
)
@pytest.mark.usefixtures("tasks_logger_at")
def test_a_coroutine_that_returned_before_the_cancel_is_recorded(
    backend: ThreadmillTaskBackend, options: dict[str, object]
) -> None:
    process = stopped_at_the_end(
        backend, deadline_tasks.ends_at_the_deadline, deadline_tasks.at_the_end, **options
    )
    assert process.crew.lane.handed_back == 0
    assert process.exit_code == ExitCode.OK  # not FORCED: nothing was left running


@pytest.mark.usefixtures("receiver_awaiting")
def test_a_task_finished_receiver_cut_short_by_the_cancel_leaves_the_outcome_recorded(
    backend: ThreadmillTaskBackend,
) -> None:
    process = stopped_at_the_end(backend, deadline_tasks.ends_now, deadline_tasks.in_receiver)
    assert process.crew.lane.handed_back == 0
    assert process.exit_code == ExitCode.OK
