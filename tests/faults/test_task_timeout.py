"""A task that hangs forever: --task-timeout records it FAILED and replaces the stuck thread."""

import signal
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.management.commands.threadmill_worker import Command as WorkerCommand
from tests.support import wait_until, worker

from . import tasks
from .support import all_successful, enqueue_counted, executions


def has_task_timeout() -> bool:
    parser = WorkerCommand().create_parser("manage.py", "threadmill_worker")
    return any("--task-timeout" in action.option_strings for action in parser._actions)


pytestmark = pytest.mark.skipif(
    not has_task_timeout(), reason="threadmill_worker has no --task-timeout option yet"
)


def test_hung_task_fails_with_task_timeout_and_the_rest_run(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    marker, log = tmp_path / "hung", tmp_path / "runs.log"
    hung = tasks.hang_forever.enqueue(str(marker))
    rest = enqueue_counted(backend, log, 20)
    command = worker(redis_url, key_prefix, "--threads", "1", "--task-timeout", "1")
    try:
        wait_until(marker.exists, "the hanging task starting")
        command.wait_for_log(rf"Task timed out task_id={hung.id} timeout_s=1\.0")
        wait_until(lambda: all_successful(rest), "the other tasks running on a fresh thread", 20)
        hung.refresh()
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
    finally:
        command.close()
    assert hung.status == TaskResultStatus.FAILED
    [error] = hung.errors
    assert error.exception_class_path == "django_threadmill.exceptions.TaskTimeout"
    assert f"Task {hung.id} ran longer than --task-timeout=1.0s" in error.traceback
    assert executions(log) == {result.id: 1 for result in rest}
