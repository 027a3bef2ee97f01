"""A task that holds the event loop running pure Python (a loop that never awaits, a parser
in Python) holds the GIL too, so the loop monitor's own looks wait for it, and it woke late
through the stall: it took that for a process short of CPU, named no task (a DEBUG line,
"no task held it"), and never recycled the process past --task-timeout, whose other async
tasks were failed with TaskTimeout instead (docs/worker.md, What blocks the loop).

Every test runs the real ``threadmill_worker`` command; the task makes the GIL as contended as
on a busy process (``spinning_tasks.CONTENDED_SWITCH_S``), so the monitor wakes late every time.
"""

import re

from django_threadmill.compat import TaskResultStatus
from tests.support import run_to_completion, worker
from tests.worker import spinning_tasks

SPIN_PATH = "tests.worker.spinning_tasks.spin"


def test_a_task_spinning_on_the_loop_is_named(redis_url: str, key_prefix: str) -> None:
    spinner = spinning_tasks.spin.enqueue(1.5)
    output = run_to_completion(worker(redis_url, key_prefix, "--burst", "-v", "2"), timeout_s=60)
    named = re.findall(r"Event loop blocked task_id=(\S+) path=(\S+) for_ms=(\d+)", output)
    assert [(task_id, path) for task_id, path, _ in named] == [(spinner.id, SPIN_PATH)], output
    assert int(named[0][2]) >= 1000
    assert "no task held it" not in output


def test_a_task_spinning_past_the_task_timeout_recycles_its_process(
    redis_url: str, key_prefix: str
) -> None:
    spinner = spinning_tasks.spin.enqueue(4)
    command = worker(
        redis_url, key_prefix, "--burst", "--task-timeout", "1", "--grace-period", "30"
    )
    output = run_to_completion(command, timeout_s=60)
    assert f"Event loop held past --task-timeout task_id={spinner.id} path={SPIN_PATH}" in output
    assert re.search(r"Worker process recycled slot=0", output), output
    spinner.refresh()
    assert spinner.status == TaskResultStatus.FAILED
    assert spinner.errors[-1].exception_class_path.endswith("TaskTimeout")
