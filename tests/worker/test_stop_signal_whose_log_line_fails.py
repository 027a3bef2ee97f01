"""A worker process stops on a signal even when the handler's own log line raises.

Python runs a signal handler in the main thread between two bytecodes; a log line written there
can raise (a write to stderr the signal interrupted, reentered: "reentrant call"), and what the
handler raises comes out of whatever the main thread was doing. The handler asks for the stop
before it logs, and a raising log line is swallowed: one signal still stops the worker cleanly,
and a second still exits at once (docs/worker.md, Signals reach the main thread). Here a filter
on the worker's logger raises on the handler's lines, as such a write would.
"""

import signal
import textwrap
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.support import Command, wait_until
from tests.worker.tasks import wait_for_file

SCRIPT = textwrap.dedent(
    """
    import logging, sys

    import django

    django.setup()
    from django_threadmill.compat import task_backends
    from django_threadmill.worker.process import WorkerProcess
    from tests.worker.support import worker_options

    def refuse_the_handlers_lines(record):
        if record.getMessage().startswith(("Stopping on", "Second signal")):
            raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")
        return True

    logging.getLogger("django_threadmill.worker.process").addFilter(refuse_the_handlers_lines)
    worker = WorkerProcess(worker_options(grace_period_s=30.0), task_backends["default"])
    code = worker.run()
    print(f"worker ended exit_code={int(code)}", flush=True)
    sys.exit(code)
    """
)


def test_a_stop_signal_whose_log_line_raises_still_stops_the_worker(
    redis_url: str, key_prefix: str
) -> None:
    worker = Command(redis_url, key_prefix, code=SCRIPT)
    try:
        worker.wait_for_log(r"Worker process started")
        worker.signal(signal.SIGTERM)
        assert worker.wait(60) == 0, worker.log
        log = worker.log
    finally:
        worker.close()
    assert "RuntimeError" not in log
    assert "Worker process stopped" in log
    assert "worker ended exit_code=0" in log


def test_a_second_signal_whose_log_line_raises_still_exits_at_once(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    task_id = wait_for_file.enqueue(str(tmp_path / "never")).id  # holds the stop's grace period
    worker = Command(redis_url, key_prefix, code=SCRIPT)
    try:
        wait_until(
            lambda: backend.get_result(task_id).status == TaskResultStatus.RUNNING, "task running"
        )
        worker.signal(signal.SIGTERM)
        worker.wait_for_log(r"Waiting up to 30s for 1 running task")  # the first was heard
        worker.signal(signal.SIGTERM)
        assert worker.wait(60) == ExitCode.FORCED, worker.log
        log = worker.log
    finally:
        worker.close()
    assert "RuntimeError" not in log
    assert "worker ended" not in log  # it exited in the handler, not through the stop
