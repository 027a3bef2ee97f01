"""How a recycled or stopped-alone worker process ended is what the supervisor reports, and what
a ``--burst`` exits with (docs/worker.md, Recycling; Exit codes).

A process that recycled while the one it replaced still ran (one extra process per slot) and
exited 6 (Redis did not take its last writes) was read under ``--burst`` as the burst's end: the
supervisor said nothing of it, and started no process in its slot until the other one's long
task ended; the queues went unserved meanwhile.

A worker process whose own stop raised (a log handler a task added) exited 1, the code of tasks
still running past the grace period: stopped alone, it was logged as stopped "with tasks still
running after the grace period", recycled, as "recycled with tasks still running after the grace
period (named in its ERROR above ...)", which named nothing, and a burst exited 1. It now exits
5, the code of a process whose own code failed: a death, restarted, and a burst exits 5.

The real ``threadmill_worker`` command in a subprocess, on a redis-server of each test's own
(one test pauses it). Tasks hold their thread until the test creates a file: no timing involved.
"""

import logging
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus, task
from django_threadmill.worker.exit_codes import ExitCode
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until
from tests.worker import tasks

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


class StopLineBreaker(logging.Handler):
    """A log handler that raises on the last line of a worker process's stop, as a
    half-configured integration's can: the stop itself raises, after it has done its work."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Worker process stopped worker_id="):
            raise RuntimeError("this handler cannot write the stop's last line")


@task
def breaks_its_process_stop(path: str) -> str:
    """Add the breaking handler to this process's logger; hold the thread until ``path``
    exists."""
    logging.getLogger("django_threadmill").addHandler(StopLineBreaker())
    while not Path(path).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    return "added"


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


def running(*results: TaskResult) -> None:
    """Wait until the worker has written that every one of ``results``' tasks started."""
    wait_until(
        lambda: all(status(result) == TaskResultStatus.RUNNING for result in results),
        "the tasks running",
    )


@pytest.mark.timeout(150)
def test_a_burst_replaces_at_once_a_recycled_process_that_left_writes_to_the_reaper(
    own_redis: RedisProcess, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    args = ("--burst", "--threads", "2", "--max-tasks", "1", "--grace-period", "0.5")
    worker = start_worker(*args, "--reap-interval", "0", options={"socket_timeout": 2})
    long = tasks.wait_for_file.enqueue(str(tmp_path / "long"))
    short = tasks.wait_for_file.enqueue(str(tmp_path / "short"))
    try:
        running(long, short)
        (tmp_path / "short").touch()  # the first process recycles, the long task running
        first = int(worker.wait_for_log(r"Worker process recycling slot=0 pid=(\d+)")[1])
        wait_until(lambda: len(worker.child_pids()) == 2, "the replacement spawned")
        second = worker.child_pids()[1]
        last = tasks.wait_for_file.enqueue(str(tmp_path / "last"))
        running(last)
        with paused(own_redis):
            (tmp_path / "last").touch()  # it recycles in turn; Redis cannot take the outcome
            worker.wait_for_log(
                rf"Worker process stopped worker_id=\S+:{second}:\S+ finished=1 exit_code=6",
                WAIT_S,
            )
        worker.wait_for_log(
            rf"WARNING .*Recycled worker process stopped with work left to the reaper slot=0 "
            rf"pid={second}\b",
            WAIT_S,
        )
        new = tasks.pid.enqueue()
        wait_until(lambda: status(new) == TaskResultStatus.SUCCESSFUL, "a new task running")
        assert new.return_value not in (first, second)
        assert status(long) == TaskResultStatus.RUNNING  # the first process still runs it
    finally:
        (tmp_path / "long").touch()
    assert worker.wait(WAIT_S) == ExitCode.DROPPED, worker.log
    assert status(long) == TaskResultStatus.SUCCESSFUL


def stopped_alone(worker: Command, tmp_path: Path) -> tuple[int, str]:
    """Stop the worker's process with a SIGTERM of its own while its task runs; return its
    pid and the supervisor's line for how it ended."""
    release = tmp_path / "release"
    running(breaks_its_process_stop.enqueue(str(release)))
    [pid] = worker.child_pids()
    os.kill(pid, signal.SIGTERM)
    worker.wait_for_log(rf"Stopping on SIGTERM worker_id=\S+:{pid}:")
    release.touch()
    return pid, rf"ERROR .*Worker process died slot=0 pid={pid} status=exit code 5 restart_in_s="


def recycled(worker: Command, tmp_path: Path) -> tuple[int, str]:
    """Let the worker's process recycle after its task; return its pid and the supervisor's
    line for how it ended."""
    release = tmp_path / "release"
    release.touch()
    breaks_its_process_stop.enqueue(str(release))
    pid = int(worker.wait_for_log(r"Worker process recycling slot=0 pid=(\d+)")[1])
    return pid, (
        rf"ERROR .*Recycled worker process died slot=0 pid={pid} status=exit code 5; its "
        r"replacement runs on"
    )


@pytest.mark.parametrize(
    ("end", "args"),
    [(stopped_alone, ()), (recycled, ("--max-tasks", "1"))],
    ids=["stopped-alone", "recycled"],
)
def test_a_worker_process_whose_stop_raises_is_a_crash_not_tasks_left_running(
    start_worker: Callable[..., Command],
    tmp_path: Path,
    end: Callable[[Command, Path], tuple[int, str]],
    args: tuple[str, ...],
) -> None:
    worker = start_worker("--burst", "--threads", "1", "--reap-interval", "0", *args)
    pid, said = end(worker, tmp_path)
    after = tasks.square.enqueue(3)

    assert worker.wait(WAIT_S) == ExitCode.CRASHED, worker.log
    assert re.search(
        rf"CRITICAL .*Worker process failed, exiting worker_id=\S+:{pid}:\S+ exit_code=5\n"
        r"Traceback",
        worker.log,
    ), worker.log
    assert re.search(said, worker.log), worker.log
    assert "still running after the grace period" not in worker.log
    assert status(after) == TaskResultStatus.SUCCESSFUL  # the burst went on
    assert after.return_value == 9
