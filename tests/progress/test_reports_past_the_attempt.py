"""Reports an attempt's code makes once the worker is done with that attempt land nowhere."""

import textwrap
import time
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskContext, TaskResultStatus, task
from django_threadmill.progress import progress_of, report_progress
from tests.support import Command, run_to_completion


def _wait_for(path: Path) -> None:
    """The task's own wait (the test creates the file), polled."""
    while not path.exists():
        time.sleep(0.01)


@task(takes_context=True)
def reports_past_its_timeout(context: TaskContext, gate: str, reported: str) -> None:
    """Report, wait past --task-timeout for ``gate``, then report again as the abandoned
    thread it now runs in, and say so by creating ``reported``."""
    report_progress(context, 1, 2, "before the timeout")
    _wait_for(Path(gate))
    report_progress(context, 2, 2, "after the timeout")
    Path(reported).touch()


# A worker in this process (--processes 0) whose watchdog, once it abandoned the thread, lets
# the task go on and waits, in the timed-out task's task_finished receiver, until the abandoned
# thread reported: its report waits in the process while the timeout is not written yet.
REPORTED_WHILE_THE_TIMEOUT_IS_WRITTEN = textwrap.dedent(
    """
    import sys
    import threading
    from pathlib import Path

    import django
    from django.core.management import execute_from_command_line

    django.setup()
    from django_threadmill.compat import task_finished

    def abandoned_thread_reports(sender, task_result, **kwargs):
        if threading.current_thread().name != "threadmill-watchdog":
            return
        gate, reported = (Path(arg) for arg in task_result.args)
        gate.touch()
        for _ in range(1000):
            if reported.exists():
                return
            threading.Event().wait(0.01)
        print("ABANDONED THREAD DID NOT REPORT", file=sys.stderr, flush=True)

    task_finished.connect(abandoned_thread_reports, weak=False)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_a_thread_abandoned_past_the_timeout_writes_no_progress(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The abandoned thread's report rode the timeout's finish call: the FAILED result read
    2 of 2, "after the timeout", progress the attempt made once it was over."""
    gate, reported = tmp_path / "gate", tmp_path / "reported"
    result = reports_past_its_timeout.enqueue(str(gate), str(reported))
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "0", "--burst", "--threads", "1", "--task-timeout", "1"),
        code=REPORTED_WHILE_THE_TIMEOUT_IS_WRITTEN,
    )
    try:
        log = run_to_completion(command)
    finally:
        gate.touch()
    assert "ABANDONED THREAD DID NOT REPORT" not in log, log
    failed = backend.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED, log
    progress = progress_of(failed)
    assert progress is not None
    assert (progress.done, progress.note) == (1, "before the timeout")
