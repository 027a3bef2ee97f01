"""A worker whose project's LOGGING handles neither Django's task logger nor the root logger does
not print Django's failure line through Python's last resort, whatever the log format.

On Django 6 that line goes to the ``django`` logger, whose handlers Django configures (a console
only under DEBUG). The Django 5.2 backport logs it on ``django_tasks``, outside that tree: with
no handler there, Python's ``logging.lastResort`` printed it, its traceback ending in the task's
message as written, so whoever could make a task fail could add a line that read as the
worker's. The worker's own ``Task failed`` line, escaped, reports the failure.
"""

import pytest

from testproject.example.tasks import fail
from tests.support import run_to_completion, worker

FORGED = "2026-12-07 14:02:12,753 INFO django_threadmill.worker.process Worker process stopped"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_djangos_failure_line_is_left_to_the_projects_handlers(
    redis_url: str, key_prefix: str, log_format: str
) -> None:
    failing = fail.enqueue(f"bad address a@b\n{FORGED}")
    log = run_to_completion(worker(redis_url, key_prefix, "--burst", "--log-format", log_format))

    assert not [line for line in log.splitlines() if line.startswith(FORGED)], log
    assert f"Task id={failing.id}" not in log, log
    assert f"Task failed task_id={failing.id}" in log, log
