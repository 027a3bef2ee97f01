"""--log-format json: the lines a root console handler prints (Django's failure line with its
traceback, a task's own log lines) are JSON objects too, one per line, however many lines the
task's own text holds."""

import json
import logging
import sys

from django.core.management import call_command

from django_threadmill.worker.logs import JsonFormatter
from testproject.example.tasks import fail
from tests.support import worker

# The LOGGING many projects start with: the root logger prints to the console.
FRESH_PROJECT = {"DJANGO_SETTINGS_MODULE": "testproject.settings_fresh"}


def test_djangos_failure_line_is_one_json_object_holding_the_tasks_message(
    redis_url: str, key_prefix: str
) -> None:
    failing = fail.enqueue("line one\nline two")
    command = worker(
        redis_url, key_prefix, "--burst", "--log-format", "json", extra_env=FRESH_PROJECT
    )
    try:
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        command.close()

    # The system checks print before logging is configured: the log lines start after them.
    lines = log.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("{"))
    entries = [json.loads(line) for line in lines[first:]]
    [django_line] = [entry for entry in entries if entry["message"].startswith("Task id=")]
    assert django_line["message"].startswith(f"Task id={failing.id} ")
    assert django_line["level"] == "ERROR"
    assert "ValueError: line one\nline two" in django_line["exception"]


def test_an_in_process_run_puts_the_console_handlers_format_back() -> None:
    """A caller that goes on (a test) prints in its own format again."""
    console = logging.StreamHandler(sys.stderr)
    own = logging.Formatter("%(message)s")
    console.setFormatter(own)
    root = logging.getLogger()
    root.addHandler(console)
    try:
        call_command("threadmill_reap", "--once", "--log-format", "json")
    finally:
        root.removeHandler(console)
    assert console.formatter is own
    assert logging.lastResort is None or not isinstance(logging.lastResort.formatter, JsonFormatter)
