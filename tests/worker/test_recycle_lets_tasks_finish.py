"""A recycled process (--max-tasks, --max-memory) lets the tasks it runs finish, however long they
take: --grace-period bounds a stop, which something outside waits for, not a recycle.

It once stopped as at a SIGTERM: a task still running beside the one that reached the limit was
cut short at the grace period, left to the reaper (failed with LeaseExpired, or run again), and
the process exited 1, which the supervisor logged as a death and restarted with backoff.
"""

from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.support import Command, wait_until

from . import tasks


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


def start_two_waiting(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> tuple[Command, TaskResult, TaskResult]:
    """Start a worker that recycles after one task, with two tasks running at once; end the
    short one, so the long one runs on while its process recycles."""
    long = tasks.wait_for_file.enqueue(str(tmp_path / "long may end"))
    short = tasks.wait_for_file.enqueue(str(tmp_path / "short may end"))
    worker = start_worker("--threads", "2", "--max-tasks", "1", "--grace-period", "0", "--burst")
    wait_until(
        lambda: status(long) == status(short) == TaskResultStatus.RUNNING, "both tasks running"
    )
    (tmp_path / "short may end").touch()
    wait_until(lambda: status(short) == TaskResultStatus.SUCCESSFUL, "the short task ending")
    return worker, long, short


def test_the_task_running_beside_the_one_that_reached_the_limit_finishes(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, long, _ = start_two_waiting(backend, start_worker, tmp_path)
    (tmp_path / "long may end").touch()  # a grace period of 0 has passed: the short one's
    # outcome was written after it
    assert worker.wait(60) == 0, worker.log
    assert status(long) == TaskResultStatus.SUCCESSFUL
    assert long.attempts == 1
    assert "Worker process recycled" in worker.log
    assert "Worker process died" not in worker.log


def test_a_stop_asked_while_it_waits_holds_the_tasks_to_the_grace_period(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, long, _ = start_two_waiting(backend, start_worker, tmp_path)
    worker.wait_for_log(r"Recycling once 1 running task finish")
    worker.signal()  # SIGTERM to the supervisor, relayed to the process
    assert worker.wait(60) == ExitCode.FORCED, worker.log
    assert "Threads still running after the grace period" in worker.log
    assert status(long) == TaskResultStatus.RUNNING  # its lease lapses; the reaper settles it
