"""Work an async task started and left running that goes on through the shutdown's cancel is
left behind once its second is up: a WARNING names the task that started it. The process
exited without a word of it, its ``finally`` blocks never run.

The test runs the real ``threadmill_worker`` command in a subprocess.
"""

from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import run_to_completion, worker
from tests.worker import async_tasks


def test_work_left_running_that_ignores_its_cancel_at_shutdown_is_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    cancelled = tmp_path / "cancelled"
    result = async_tasks.leaves_work_ignoring_its_cancel.enqueue(str(cancelled))
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"))
    assert backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
    assert cancelled.exists()  # it was cancelled, and went on
    assert (
        "Work async tasks left running did not end within 1s of its cancel at shutdown count=1 "
        f"tasks={result.id}:tests.worker.async_tasks.leaves_work_ignoring_its_cancel (the "
        "process exits without it: its finally blocks do not run)"
    ) in output


def test_work_left_running_that_fails_as_it_is_cancelled_at_shutdown_is_named(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """Its line gave the error alone: not which task's work it was."""
    ended = tmp_path / "ended"
    result = async_tasks.leaves_an_exit_running.enqueue(str(ended))
    output = run_to_completion(worker(redis_url, key_prefix, "--burst"))
    assert ended.exists()
    assert (
        "Work an async task left running failed at shutdown "
        "error=SystemExit('the work left running exits') "
        f"task_id={result.id} path=tests.worker.async_tasks.leaves_an_exit_running"
    ) in output
