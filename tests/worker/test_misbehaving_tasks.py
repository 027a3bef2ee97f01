"""A task that misbehaves ends its own attempt, recorded, and nothing else: the worker thread,
the event loop and the process go on, and every other task runs once (docs/worker.md)."""

from collections.abc import Callable
from pathlib import Path

from django_threadmill.compat import TaskResultStatus
from tests.support import Command
from tests.worker import misbehaving, tasks


def test_exceptions_that_break_formatting_are_recorded_and_the_thread_goes_on(
    start_worker: Callable[..., Command],
) -> None:
    self_quoting = misbehaving.raises_self_quoting.enqueue()
    bad_notes = misbehaving.raises_bad_notes.enqueue()
    after = tasks.square.enqueue(3)

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    for result, name in ((self_quoting, "SelfQuoting"), (bad_notes, "BadNotes")):
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        [error] = result.errors
        assert error.exception_class_path == f"tests.worker.misbehaving.{name}"
    assert "<str() of the exception raised RecursionError>" in worker.log
    # Python 3.12's traceback raises on the notes (the worker's fallback says so); 3.13's
    # says it ignored them: either way the message is kept.
    assert "tests.worker.misbehaving.BadNotes: plain message" in bad_notes.errors[0].traceback
    after.refresh()
    assert after.return_value == 9
    assert "Thread died" not in worker.log


def test_a_result_too_large_or_holding_itself_fails_its_task_naming_the_fix(
    start_worker: Callable[..., Command],
) -> None:
    """Past Redis's 512 MB a result failed its whole finish call for good, holding up every
    outcome behind it; a result holding itself raised a bare RecursionError."""
    too_large = misbehaving.returns.enqueue(200)
    fits = misbehaving.returns.enqueue(10)
    looped = misbehaving.returns_itself.enqueue()

    worker = start_worker("--threads", "1", "--burst", options={"max_result_bytes": 100})
    assert worker.wait(60) == 0, worker.log

    too_large.refresh()
    [error] = too_large.errors
    assert error.exception_class_path == "builtins.ValueError"
    assert "returned 202 bytes of JSON, above max_result_bytes=100" in error.traceback
    fits.refresh()
    assert fits.return_value == "x" * 10
    looped.refresh()
    assert "nested too deeply to store as JSON (or holding itself)" in looped.errors[0].traceback


def test_a_child_the_task_forked_ends_instead_of_running_the_workers_tasks(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    forking = misbehaving.forks_and_returns.enqueue()
    runs = tmp_path / "runs.log"
    after = [tasks.count_run.enqueue(str(runs), n) for n in range(4)]

    worker = start_worker("--threads", "1", "--prefetch", "8", "--burst")
    assert worker.wait(60) == 0, worker.log

    forking.refresh()
    assert forking.status == TaskResultStatus.SUCCESSFUL
    assert forking.return_value > 0  # the parent's return: the child's never reached Redis
    assert sorted(runs.read_text().split()) == ["0", "1", "2", "3"]  # each once
    for result in after:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_the_retry_policy_counts_attempts_the_task_cannot_change(
    start_worker: Callable[..., Command],
) -> None:
    forgetful = misbehaving.forgets_its_attempts.enqueue()

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    forgetful.refresh()
    assert forgetful.status == TaskResultStatus.FAILED
    assert len(forgetful.errors) == 3  # max_attempts


def test_async_tasks_that_cancel_stop_or_exit_the_loop_end_alone(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    marker = str(tmp_path / "exit-raised")
    cancelled = misbehaving.raises_cancelled.enqueue()
    awaited = misbehaving.awaits_a_cancelled_future.enqueue()
    stopping = misbehaving.stops_the_loop.enqueue()
    leaving = misbehaving.leaves_an_exit_behind.enqueue(marker)
    waiting = misbehaving.waits_for.enqueue(marker)

    worker = start_worker("--burst")
    assert worker.wait(60) == 0, worker.log

    for result in (cancelled, awaited):
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        assert result.errors[0].exception_class_path == "asyncio.exceptions.CancelledError"
    for result, value in ((stopping, "still running"), (leaving, "returned"), (waiting, "went on")):
        result.refresh()
        assert result.return_value == value
    assert "Event loop stopped by an async task (loop.stop()); it runs on" in worker.log
    assert "left running raised SystemExit; the loop runs on" in worker.log
    assert "Thread died" not in worker.log


def test_task_timeout_ends_an_async_task_that_ignores_the_cancel_and_spares_its_own_timeouts(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    ignoring = misbehaving.ignores_cancel.enqueue(str(tmp_path / "started"))
    own_timeout = misbehaving.times_out_itself.enqueue()

    worker = start_worker("--burst", "--task-timeout", "0.5", "--grace-period", "1")
    assert worker.wait(60) == 0, worker.log

    ignoring.refresh()
    assert ignoring.status == TaskResultStatus.FAILED
    assert ignoring.errors[0].exception_class_path == "django_threadmill.exceptions.TaskTimeout"
    own_timeout.refresh()
    assert own_timeout.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in own_timeout.errors] == ["builtins.TimeoutError"] * 2
