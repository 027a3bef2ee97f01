"""An async task that raised before the cancel at the grace period's end reached it is recorded
(its retry scheduled), not handed back (docs/worker.md, Two lanes: "A coroutine that had returned
or raised by then is not handed back: its outcome is recorded").

A failed attempt whose retry policy retries it awaits one more thing after its coroutine ended:
the check, off the loop (``asyncio.to_thread``), that its workflow did not stop it. The lane's
cancel landed there, the attempt went back unrecorded as if still running, and the task sat
RUNNING until its lease lapsed; the reaper then recorded ``LeaseExpired`` in place of the task's
own error, and the process exited 1 as if it had left a task running.

The real ``threadmill_worker`` command in a subprocess, a real SIGTERM. The task holds the loop
(a blocking wait, on purpose) until the lane's cancel is queued, then raises: the cancel runs
on the loop's next turn, while the attempt awaits its retry check. No timing involved.
"""

import asyncio
import signal
import threading
import time
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task
from django_threadmill.worker.event_loop import EventLoopLane
from tests.support import run_to_completion, wait_until, worker

# A bound on each wait, never reached when the test passes: a command's start-up and exit
# took 30 s on a loaded 2-core machine (tests/support.py, wait_until).
WAIT_S = 60.0


def _cancel_queued(event_loop: asyncio.AbstractEventLoop) -> bool:
    """Tell whether the event loop lane queued its cancel of what it runs (the grace period's
    end) on ``event_loop``, from its own thread, which this task holds."""
    lane = next(t for t in threading.enumerate() if isinstance(t, EventLoopLane))
    try:
        queued = list(event_loop._ready)  # type: ignore[attr-defined]
    except RuntimeError:  # appended to meanwhile: look again
        return False
    return any(getattr(handle, "_callback", None) == lane._cancel_and_stop for handle in queued)


@task(retry=ExponentialBackoff(base_delay=0.01, max_attempts=2, jitter=0))
async def fails_as_the_grace_period_ends(first: str, runs: str) -> str:
    """First attempt: say so, hold the loop until the lane's cancel is queued, then raise an
    error the retry policy retries. Second attempt: succeed."""
    with open(runs, "a") as out:
        out.write("run\n")
    if Path(first).exists():
        return "second attempt"
    Path(first).touch()
    event_loop = asyncio.get_running_loop()
    gives_up = time.monotonic() + WAIT_S
    while not _cancel_queued(event_loop) and time.monotonic() < gives_up:
        time.sleep(0.005)  # the loop is held on purpose: the cancel runs once this raised
    raise ConnectionError("the service went away")


def test_an_attempt_that_raised_before_the_cancel_is_retried_not_handed_back(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    first, runs = tmp_path / "first", tmp_path / "runs"
    result = fails_as_the_grace_period_ends.enqueue(str(first), str(runs))
    command = worker(redis_url, key_prefix, "--threads", "1", "--grace-period", "0")
    try:
        wait_until(first.exists, "the first attempt running", WAIT_S)
        command.signal(signal.SIGTERM)
        exit_code = command.wait(WAIT_S)
        log = command.log
    finally:
        command.close()

    retried = backend.get_result(result.id)
    assert retried.status == TaskResultStatus.READY, (retried.status, log)  # RUNNING: handed back
    assert [e.exception_class_path for e in retried.errors] == ["builtins.ConnectionError"]
    assert "Task retry scheduled task_id=" in log
    assert exit_code == 0, log  # 1: a task left running at the deadline

    # The retry runs once more, and only once: nothing lost, nothing run twice.
    run_to_completion(worker(redis_url, key_prefix, "--burst"), timeout_s=WAIT_S)
    done = backend.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL, done.errors
    assert done.return_value == "second attempt"
    assert runs.read_text().splitlines() == ["run", "run"]
