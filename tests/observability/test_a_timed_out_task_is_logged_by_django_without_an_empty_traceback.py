"""Django's failure line for a task the watchdog ended prints no ``NoneType: None`` traceback.

The watchdog sends ``task_finished`` with no exception being handled: the task's thread, left
running, raised nothing. Django 6 logs its line without a traceback then; the Django 5.2
backport's receiver logs it with ``logger.exception``, which printed ``NoneType: None`` as if
it were the task's traceback.
"""

from testproject.example.tasks import slow
from tests.support import run_to_completion, worker

# The LOGGING many projects start with: the root logger prints Django's line to the console.
FRESH_PROJECT = {"DJANGO_SETTINGS_MODULE": "testproject.settings_fresh"}


def test_djangos_line_for_a_timed_out_task_has_no_traceback(
    redis_url: str, key_prefix: str
) -> None:
    timed_out = slow.enqueue(600)
    log = run_to_completion(
        worker(redis_url, key_prefix, "--burst", "--task-timeout", "1", extra_env=FRESH_PROJECT)
    )

    lines = log.splitlines()
    [django_line] = [n for n, line in enumerate(lines) if line.startswith("Task id=")]
    assert lines[django_line].startswith(f"Task id={timed_out.id} "), log
    assert lines[django_line].endswith("state=FAILED"), log
    assert "NoneType: None" not in log, log
