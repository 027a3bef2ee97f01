"""A task's error message holding U+2028 (LINE SEPARATOR), U+2029 (PARAGRAPH SEPARATOR) or
U+0085 (NEL) is logged on its one "Task failed" line, each as the escapes of its UTF-8 bytes.

``str.splitlines`` and many log viewers end a line at each of them. NEL, a C1 control, was
escaped with the other control characters; the two separators, which are no control
characters, were written as they were, so whoever could make a task fail could add a line that
read as the worker's, as a ``\\n`` could before it was escaped.
"""

from collections.abc import Callable

from testproject.example.tasks import fail
from tests.support import Command

FORGED = "2026-12-07 14:02:12,753 INFO django_threadmill.worker.process Worker process stopped"


def test_the_separators_and_nel_in_a_task_error_are_escaped_on_its_failure_line(
    start_worker: Callable[..., Command],
) -> None:
    failing = fail.enqueue(f"bad address\u2028{FORGED}\u2029{FORGED}\x85{FORGED}")
    worker = start_worker("--burst")
    assert worker.wait() == 0, worker.log
    log = worker.log

    lines = log.splitlines()
    [at] = [n for n, line in enumerate(lines) if "Task failed" in line]
    failed = lines[at]
    assert failed.endswith(
        f"Task failed task_id={failing.id} path=testproject.example.tasks.fail error=ValueError: "
        f"bad address\\xe2\\x80\\xa8{FORGED}\\xe2\\x80\\xa9{FORGED}\\xc2\\x85{FORGED}"
    ), failed
    # Of the lines after it, the backport's own failure line on Django 5.2 prints the task's
    # traceback, the message as it is (Python's last resort handler): a traceback, not ours.
    assert not any(line.startswith(FORGED) for line in lines[at + 1 : at + 2])
