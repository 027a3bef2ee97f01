"""A task's error message is logged on its "Task failed" line with its control characters and
bidi controls escaped (``\\x0a``, ``\\xe2\\x80\\xae``), as a pause reason is.

The message is the task's, and often carries its input (``ValueError(f"bad address
{address}")``): a line break in it ended the record's line and wrote the rest as a line of its
own, so whoever could make a task fail could add a line that reads as the worker's (a "Task
succeeded" line, say), and a right-to-left override turned a log viewer's words after it around.
"""

from collections.abc import Callable

from testproject.example.tasks import fail
from tests.support import Command

FORGED = "2026-12-07 14:02:12,753 INFO django_threadmill.worker.process Worker process stopped"


def test_a_task_errors_line_breaks_and_bidi_controls_are_logged_escaped(
    start_worker: Callable[..., Command],
) -> None:
    failing = fail.enqueue(f"bad address a@b\n{FORGED}\r\x1b[2K \u202etxet")
    worker = start_worker("--burst")
    assert worker.wait() == 0, worker.log

    [failed] = [line for line in worker.log.splitlines() if "Task failed" in line]
    assert failed.endswith(
        f"Task failed task_id={failing.id} path=testproject.example.tasks.fail error=ValueError: "
        f"bad address a@b\\x0a{FORGED}\\x0d\\x1b[2K \\xe2\\x80\\xaetxet"
    ), failed
    assert not [line for line in worker.log.splitlines() if line.startswith(FORGED)]
