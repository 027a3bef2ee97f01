"""A worker process stopped from outside the supervisor (a SIGTERM sent to its pid alone) is
replaced at once however its stop ended, a ``--burst`` goes on past it until the queues are
empty, and a burst's exit code says what its processes left to the reaper.

Under ``--burst``, such a process handed its tasks back and exited 0, which the supervisor took
for the end of the burst: with ``--processes 1`` the command exited 0, "the queues are empty",
with tasks still READY. A process whose tasks outlasted that stop's grace period exited 1 and
was taken for a death (ERROR, restarted with backoff, counted toward giving up, and a burst
exited 5), though the same stop ending 0 or 6 was replaced at once. And a recycled process that
exited 6 under ``--burst`` (Redis did not take its last writes) left the command's exit 0.

The real ``threadmill_worker`` command in a subprocess, on a redis-server of each test's own
(one test pauses it). Tasks hold their thread until the test creates a file: no timing involved.
"""

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until
from tests.worker import tasks

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


def stopped_alone(pid: int, code: int) -> str:
    """The supervisor's WARNING for a process that stopped with ``code`` on a SIGTERM of its own."""
    return (
        r"WARNING django_threadmill\.worker\.supervisor pid=\d+ \S+ Worker process stopped "
        rf"slot=0 pid={pid} status=exit code {code} \(asked directly"
    )


def running(result: TaskResult) -> None:
    """Wait until the worker has written that ``result``'s task started."""
    wait_until(
        lambda: result.refresh() or result.status == TaskResultStatus.RUNNING, "the task running"
    )


def sigterm_alone(worker: Command) -> int:
    """Send SIGTERM to the worker's one process, not to the supervisor; return its pid once
    it has heard it."""
    [pid] = worker.child_pids()
    os.kill(pid, signal.SIGTERM)
    worker.wait_for_log(rf"Stopping on SIGTERM worker_id=\S+:{pid}:")
    return pid


def test_a_burst_goes_on_past_a_process_sent_sigterm_alone_until_the_queues_are_empty(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    holding = tasks.wait_for_file.enqueue(str(release))
    after = tasks.square.enqueue(3)
    worker = start_worker("--burst", "--threads", "1", "--reap-interval", "0")
    running(holding)
    pid = sigterm_alone(worker)
    release.touch()  # the running task ends within the stop's grace period

    assert worker.wait(WAIT_S) == 0, worker.log
    assert re.search(stopped_alone(pid, 0), worker.log), worker.log
    assert len(worker.child_pids()) == 2  # the replacement emptied the queues
    after.refresh()
    assert after.status == TaskResultStatus.SUCCESSFUL, worker.log  # it was left READY
    assert after.return_value == 9
    holding.refresh()
    assert holding.status == TaskResultStatus.SUCCESSFUL


def test_a_process_sent_sigterm_alone_whose_task_outlasts_the_grace_period_is_no_death(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """It exits 1, the worker's own code for tasks still running after the grace period: a
    stop asked for, replaced at once as one ending 0 or 6 is, not restarted with backoff."""
    release = tmp_path / "release"
    holding = tasks.wait_for_file.enqueue(str(release))
    worker = start_worker("--threads", "1", "--grace-period", "0", "--reap-interval", "0")
    try:
        running(holding)
        pid = sigterm_alone(worker)
        worker.wait_for_log(stopped_alone(pid, 1), WAIT_S)
        next_task = tasks.pid.enqueue()
        wait_until(lambda: next_task.refresh() or next_task.is_finished, "a task on a new process")
        assert next_task.return_value == worker.child_pids()[1] != pid
        worker.signal()
        assert worker.wait(WAIT_S) == 0, worker.log
    finally:
        release.touch()
    assert "died" not in worker.log
    assert re.search(
        r"Threads still running after the grace period .*tasks=" + re.escape(holding.id), worker.log
    )
    holding.refresh()
    assert holding.status == TaskResultStatus.RUNNING  # leased, for the reaper


def test_a_burst_whose_process_sent_sigterm_alone_left_a_task_running_goes_on_and_exits_1(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """Not 5, "a worker process died": it stopped as asked, with a task left to the reaper."""
    release = tmp_path / "release"
    holding = tasks.wait_for_file.enqueue(str(release))
    after = tasks.square.enqueue(3)
    worker = start_worker(
        "--burst", "--threads", "1", "--grace-period", "0", "--reap-interval", "0"
    )
    try:
        running(holding)
        pid = sigterm_alone(worker)
        code = worker.wait(WAIT_S)
    finally:
        release.touch()
    assert code == ExitCode.FORCED, worker.log
    assert re.search(stopped_alone(pid, 1), worker.log), worker.log
    assert "died" not in worker.log
    after.refresh()
    assert after.return_value == 9


@pytest.mark.timeout(150)
def test_a_burst_whose_recycled_process_left_work_to_the_reaper_exits_6(
    own_redis: RedisProcess, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """The recycled process's last outcome cannot be written while Redis is paused: it exits 6,
    and the burst, which went on in its replacement once Redis answered, exits 6 too."""
    release = tmp_path / "release"
    holding = tasks.wait_for_file.enqueue(str(release))
    args = ("--burst", "--threads", "1", "--max-tasks", "1", "--grace-period", "0.5")
    worker = start_worker(*args, "--reap-interval", "0", options={"socket_timeout": 2})
    running(holding)
    recycled = worker.child_pids()[0]
    with paused(own_redis):
        release.touch()  # it ends, and the process recycles, while Redis cannot take its outcome
        worker.wait_for_log(
            rf"WARNING .*Recycled worker process stopped with work left to the reaper slot=0 "
            rf"pid={recycled}",
            WAIT_S,
        )
    assert worker.wait(WAIT_S) == ExitCode.DROPPED, worker.log
