"""The sync lane's edges: a thread --task-timeout abandoned that the system refuses to replace."""

import textwrap
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker import tasks

# The worker command, in a process whose system allows it one worker thread (a pids limit its
# abandoned threads filled): each forked worker process may start one, and no more.
ONE_WORKER_THREAD_PER_PROCESS = textwrap.dedent(
    """
    import sys
    import django_threadmill.worker.threads as threads
    from django.core.management import execute_from_command_line

    start, started = threads.WorkerThread.start, []

    def refuse_past_one(self):
        started.append(self)
        if len(started) > 1:
            raise RuntimeError("can't start new thread")
        start(self)

    threads.WorkerThread.start = refuse_past_one
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_a_refused_replacement_for_an_abandoned_thread_recycles_the_process(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The pool was left with no thread: the process held the tasks it had reserved, renewing
    their leases, and ran none of them, for as long as the hung task ran (for good)."""
    gate = tmp_path / "gate"
    hung = tasks.wait_for_file.enqueue(str(gate))
    after = [tasks.square.enqueue(n) for n in range(3)]
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "1", "--threads", "1", "--task-timeout", "0.5"),
        code=ONE_WORKER_THREAD_PER_PROCESS,
    )
    try:
        wait_until(
            lambda: all(
                backend.get_result(r.id).status == TaskResultStatus.SUCCESSFUL for r in after
            ),
            "the tasks after the hung one run",
        )
        command.wait_for_log(r"Worker process recycled slot=0")
        command.signal()
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        gate.touch()  # the abandoned thread's task ends, if its process still runs
        command.close()
    assert "Worker thread refused in place of one --task-timeout abandoned, recycling" in log
    result = backend.get_result(hung.id)
    assert result.status == TaskResultStatus.FAILED, log
    assert [e.exception_class_path for e in result.errors] == [
        "django_threadmill.exceptions.TaskTimeout"
    ], log
