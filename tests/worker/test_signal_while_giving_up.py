"""The stop an operator asks for while the supervisor already stops on its own (it gave up on a
slot whose forks the system keeps refusing, or Redis refused a process): that signal is the
operator's first, so the stop under way goes on gracefully and the command's exit code says why
it stopped. It used to count as a second signal: every worker process was killed at once, its
running tasks left to the reaper, and the exit code became 1.

The worker runs as the real ``threadmill_worker`` command in a subprocess, with real signals.
"""

import signal
import textwrap
from pathlib import Path

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.support import Command, wait_until
from tests.worker import tasks
from tests.worker.test_recycle_replacement_and_refused_fork import status

# The supervisor's forks from the second on fail as at a pids limit (EAGAIN), once the file
# argv[1] exists: the first process has taken its task by then. argv[2:]: the command's options.
REFUSE_FORKS_ONCE_GO = textwrap.dedent(
    """
    import errno
    import sys
    import time
    from pathlib import Path

    import multiprocessing.context as context
    from django.core.management import execute_from_command_line

    popen, go, forks = context.ForkProcess._Popen, Path(sys.argv[1]), []

    def refuse(process):
        forks.append(process)
        if len(forks) == 1:
            return popen(process)
        deadline = time.monotonic() + 30
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the harness's own wait for the test's go-ahead, polled
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    context.ForkProcess._Popen = staticmethod(refuse)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[2:]])
    """
)

# What the supervisor logs as it acts on a signal: a stop it relays, or a kill.
RELAYED_OR_KILLED = (
    r"Second signal: killing|Stopping worker processes[^\n]*\n(?s:.*)Stopping worker processes"
)


def giving_up_with_a_task_running(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> tuple[Command, TaskResult]:
    """Start a worker whose slot 1 the system refuses to fork until the supervisor gives up
    (exit 2) and stops slot 0, whose task (running until ``tmp_path / "release"`` exists) is
    in its grace period; return the command and the task."""
    go = tmp_path / "go"
    running = tasks.wait_for_file.enqueue(str(tmp_path / "release"))
    worker = Command(
        redis_url,
        key_prefix,
        str(go),
        "--processes",
        "2",
        "--reap-interval",
        "0",
        "--grace-period",
        "60",
        code=REFUSE_FORKS_ONCE_GO,
    )
    try:
        wait_until(lambda: status(running) == TaskResultStatus.RUNNING, "slot 0 running the task")
        go.touch()
        worker.wait_for_log(r"crashes=5; giving up", timeout_s=30)
        worker.wait_for_log(r"Waiting up to 60s for 1 running task")
    except BaseException:
        worker.close()
        raise
    return worker, running


def test_a_sigterm_while_the_supervisor_gives_up_lets_running_tasks_finish(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """systemd's or Kubernetes' SIGTERM while the supervisor stops on its own is a first
    signal: the task finishes and the command exits 2, not killed with exit code 1."""
    worker, running = giving_up_with_a_task_running(redis_url, key_prefix, tmp_path)
    try:
        worker.signal(signal.SIGTERM)
        worker.wait_for_log(RELAYED_OR_KILLED)
        (tmp_path / "release").touch()
        assert worker.wait() == ExitCode.GAVE_UP, worker.log
        assert "Second signal" not in worker.log
        assert status(running) == TaskResultStatus.SUCCESSFUL
    finally:
        worker.close()


def test_a_second_sigterm_while_the_supervisor_gives_up_kills(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    worker, running = giving_up_with_a_task_running(redis_url, key_prefix, tmp_path)
    try:
        worker.signal(signal.SIGTERM)
        worker.wait_for_log(RELAYED_OR_KILLED)
        worker.signal(signal.SIGTERM)
        assert worker.wait() == ExitCode.FORCED, worker.log
        assert "Second signal: killing worker processes count=1" in worker.log
        assert status(running) == TaskResultStatus.RUNNING  # its lease lapses: the reaper's
    finally:
        worker.close()
