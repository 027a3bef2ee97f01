"""A worker process that cannot run its own stop does not hold the supervisor's stop for good.

A process frozen by SIGSTOP (a debugger, a job-control ``kill -STOP``), or whose task holds the
GIL in C code (a regex that backtracks for minutes, an extension that never releases it), never
reads the supervisor's STOP message, so its own bound (``--grace-period`` + 10 s) never starts.
The supervisor waited for it forever: a stop with ``--grace-period 2`` took 37 s behind a
backtracking regex, and never ended behind a frozen process, although docs/worker.md, Shutdown
bounds the whole stop. It now kills what is still alive a few seconds past that bound, exit
code 1, and the task the process ran stays leased for the reaper, as after a second signal.
"""

import os
import signal
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker.tasks import work_for

# The stop's bound with --grace-period 1 is 1 + 10 s, and the supervisor kills 3 s past it;
# this deadline leaves a loaded machine room, and without the kill the stop never ends.
STOP_DEADLINE_S = 60.0


def _state(pid: int) -> str:
    """The process's state letter in /proc (``T``: stopped by a signal); "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return ""


def test_a_frozen_worker_process_is_killed_once_the_stop_outlasts_its_bound(
    start_worker: Callable[..., Command], backend: ThreadmillTaskBackend
) -> None:
    command = start_worker("--grace-period", "1")
    command.wait_for_log(r"Worker process started")
    result = work_for.enqueue(600)
    wait_until(
        lambda: backend.get_result(result.id).status == TaskResultStatus.RUNNING,
        "the task started, and said so",
    )
    (pid,) = command.child_pids()
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: _state(pid) == "T", "the worker process stopped")
        command.signal(signal.SIGTERM)

        assert command.wait(STOP_DEADLINE_S) == 1, command.log
    finally:
        if _state(pid):
            os.kill(pid, signal.SIGKILL)
    assert f"still running past the stop's bound, killing them pids={pid} " in command.log
    assert "Supervisor stopped exit_code=1" in command.log
    assert not _state(pid), "the frozen process was left behind"
    # Not lost: still leased, so the reaper settles it once the lease lapses.
    assert backend.get_result(result.id).status == TaskResultStatus.RUNNING
