"""A recycled process's replacement starts as soon as it says it recycles, not once it exits.

A process recycled (--max-tasks, --max-memory) lets its running tasks finish, and took no new
ones meanwhile; its replacement only started once it exited, so with --processes 1 nothing ran
new tasks for as long as the longest running one. Now the process tells the supervisor as it
starts recycling, and its replacement runs beside it: one extra process per slot at most.

And a fork the system refuses (a pids limit) is tried again with backoff, instead of ending the
supervisor and every process with it.
"""

import os
import re
import signal
import textwrap
from collections.abc import Callable
from pathlib import Path

from django_threadmill.compat import Task, TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.support import Command, wait_until

from . import tasks


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


def finished(result: TaskResult) -> bool:
    return status(result) == TaskResultStatus.SUCCESSFUL


def run_long_and_short(
    tmp_path: Path, name: str, long_task: Task = tasks.wait_for_file
) -> TaskResult:
    """Enqueue a long and a short task; wait until both run, end the short one: the process
    that ran them reaches --max-tasks 1 with the long one running. Return the long one."""
    long = long_task.enqueue(str(tmp_path / f"long {name} may end"))
    short = tasks.wait_for_file.enqueue(str(tmp_path / f"short {name} may end"))
    wait_until(lambda: status(long) == status(short) == TaskResultStatus.RUNNING, "both running")
    (tmp_path / f"short {name} may end").touch()
    wait_until(lambda: finished(short), "the short task ending")
    return long


def recycling_with_a_long_task(
    start_worker: Callable[..., Command],
    tmp_path: Path,
    *args: str,
    long_task: Task = tasks.wait_for_file,
) -> tuple[Command, TaskResult, int]:
    """Start a one-process worker that recycles after one task, running two tasks at once; end
    the short one, so the process recycles with the long one running. Return the worker, the
    long task and the recycled process's pid, once its replacement has started."""
    worker = start_worker("--threads", "2", "--max-tasks", "1", "--reap-interval", "0", *args)
    long = run_long_and_short(tmp_path, "a", long_task)
    recycled = int(worker.wait_for_log(r"Worker process recycling slot=0 pid=(\d+)")[1])
    wait_until(lambda: len(worker.child_pids()) == 2, "the replacement spawned")
    return worker, long, recycled


def alive(pid: int) -> bool:
    """Tell whether ``pid`` runs (not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_replacement_takes_tasks_while_the_recycled_process_finishes_its_own(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, long, recycled = recycling_with_a_long_task(start_worker, tmp_path)

    new = tasks.pid.enqueue()
    wait_until(lambda: finished(new), "a new task running while the long one runs", timeout_s=15)

    assert new.return_value != recycled
    assert status(long) == TaskResultStatus.RUNNING
    assert alive(recycled)
    (tmp_path / "long a may end").touch()
    worker.wait_for_log(rf"Worker process recycled slot=0 pid={recycled}\b")
    assert finished(long)
    assert long.attempts == 1
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    assert "Worker process died" not in worker.log


def test_a_process_that_recycles_while_the_last_one_still_finishes_waits_for_it(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """One extra process per slot at most: a replacement that recycles in turn, while the
    process it replaced still runs, is replaced once that one has ended."""
    worker, _, first = recycling_with_a_long_task(start_worker, tmp_path)
    second = worker.child_pids()[1]
    run_long_and_short(tmp_path, "b")  # the replacement recycles too, with a long task
    worker.wait_for_log(rf"Worker process recycling slot=0 pid={second}\b")
    new = tasks.pid.enqueue()

    (tmp_path / "long a may end").touch()
    wait_until(lambda: finished(new), "a new task once the first process ended")
    first_ended = worker.log.index(f"Worker process recycled slot=0 pid={first}")
    third = worker.log.index("Worker process spawned", worker.log.index(f"pid={second}"))
    assert first_ended < third, worker.log  # not spawned while two processes ran
    assert new.return_value == worker.child_pids()[2]
    assert alive(second)
    (tmp_path / "long b may end").touch()
    worker.wait_for_log(rf"Worker process recycled slot=0 pid={second}\b")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_sigterm_during_a_recycle_stops_the_recycled_process_and_its_replacement(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, long, recycled = recycling_with_a_long_task(start_worker, tmp_path)
    replacement = worker.child_pids()[1]
    worker.wait_for_log(rf"Worker process started worker_id=\S+ pid={replacement} ")

    worker.signal(signal.SIGTERM)
    worker.wait_for_log(r"Stopping worker processes count=2")
    worker.wait_for_log(r"Waiting up to 30s for 1 running task to finish")
    (tmp_path / "long a may end").touch()

    assert worker.wait() == 0, worker.log
    assert worker.log.count("Stopping on supervisor request") == 2
    assert finished(long)
    assert long.attempts == 1
    assert not alive(recycled)
    assert not alive(replacement)


def test_a_second_sigterm_during_a_recycle_kills_both(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, long, recycled = recycling_with_a_long_task(start_worker, tmp_path)
    replacement = worker.child_pids()[1]

    worker.signal(signal.SIGTERM)
    worker.wait_for_log(r"Stopping worker processes count=2")
    worker.signal(signal.SIGTERM)

    assert worker.wait() == ExitCode.FORCED, worker.log
    # count=1 when the idle replacement had already stopped at the first signal.
    assert re.search(r"Second signal: killing worker processes count=[12]\b", worker.log)
    assert not alive(recycled)
    assert not alive(replacement)
    assert status(long) == TaskResultStatus.RUNNING  # its lease lapses; the reaper settles it


def test_a_recycled_process_that_dies_is_not_restarted_its_replacement_serves(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, _, recycled = recycling_with_a_long_task(start_worker, tmp_path)
    replacement = worker.child_pids()[1]

    os.kill(recycled, signal.SIGKILL)

    worker.wait_for_log(
        rf"Recycled worker process died slot=0 pid={recycled} status=signal 9; its replacement"
    )
    new = tasks.pid.enqueue()
    wait_until(lambda: finished(new), "a task on the replacement")
    assert new.return_value == replacement
    assert "Worker process died" not in worker.log
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_burst_looks_again_for_what_the_recycled_process_left_once_it_ended(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """The replacement finds the queues empty and ends while the recycled process still runs
    a task that enqueues a follow-up as it ends: a fresh process runs the follow-up."""
    worker, long, _ = recycling_with_a_long_task(
        start_worker, tmp_path, "--burst", long_task=tasks.wait_then_enqueue
    )
    replacement = worker.child_pids()[1]
    wait_until(lambda: not Path(f"/proc/{replacement}").exists(), "the replacement ending")

    (tmp_path / "long a may end").touch()

    assert worker.wait() == 0, worker.log
    assert finished(long)
    follow_up = tasks.pid.get_result(long.return_value)
    assert follow_up.status == TaskResultStatus.SUCCESSFUL
    assert follow_up.return_value == worker.child_pids()[2]


def test_a_burst_in_which_a_recycled_process_died_exits_5(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, _, recycled = recycling_with_a_long_task(start_worker, tmp_path, "--burst")

    os.kill(recycled, signal.SIGKILL)

    assert worker.wait() == ExitCode.CRASHED, worker.log
    assert f"Recycled worker process died slot=0 pid={recycled} status=signal 9" in worker.log


# The supervisor's forks from the second on fail as at a pids limit (a container's pids.max,
# ulimit -u): EAGAIN. argv[1]: how many of them fail; argv[2:]: the command's options.
REFUSE_FORKS = textwrap.dedent(
    """
    import errno
    import sys

    import multiprocessing.context as context
    from django.core.management import execute_from_command_line

    popen, refusals, forks = context.ForkProcess._Popen, int(sys.argv[1]), []

    def refuse(process):
        forks.append(process)
        if 1 < len(forks) <= 1 + refusals:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return popen(process)

    context.ForkProcess._Popen = staticmethod(refuse)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[2:]])
    """
)


def refused_forks(redis_url: str, key_prefix: str, refusals: int, *args: str) -> Command:
    return Command(
        redis_url,
        key_prefix,
        str(refusals),
        "--processes",
        "1",
        "--reap-interval",
        "0",
        *args,
        code=REFUSE_FORKS,
    )


def test_a_fork_the_system_refuses_is_tried_again_not_the_end_of_the_supervisor(
    redis_url: str, key_prefix: str
) -> None:
    """A refused fork (EAGAIN at a pids limit) raised out of the supervisor: a traceback, exit
    1, and every other worker process stopped with it."""
    first, second = tasks.pid.enqueue(), tasks.pid.enqueue()
    worker = refused_forks(redis_url, key_prefix, 1, "--max-tasks", "1")
    try:
        wait_until(lambda: finished(first) and finished(second), "both tasks, the second later")
        assert first.return_value != second.return_value
        assert (
            "Worker process not started slot=0 error=[Errno 11] Resource temporarily "
            "unavailable restart_in_s=0.5" in worker.log
        )
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log
        assert "Traceback" not in worker.log
    finally:
        worker.close()


def test_forks_the_system_keeps_refusing_make_the_command_give_up(
    redis_url: str, key_prefix: str
) -> None:
    worker = refused_forks(redis_url, key_prefix, 100, "--max-tasks", "1")
    try:
        tasks.pid.enqueue()
        assert worker.wait() == ExitCode.GAVE_UP, worker.log
        assert (
            "Worker processes keep dying at start slot=0 status=fork refused ([Errno 11] "
            "Resource temporarily unavailable) crashes=5; giving up" in worker.log
        )
    finally:
        worker.close()
