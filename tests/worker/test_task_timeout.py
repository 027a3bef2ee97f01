"""--task-timeout records a stuck task as FAILED and a fresh thread carries on."""

from collections.abc import Callable

from django_threadmill.compat import TaskResultStatus
from tests.support import Command
from tests.worker import tasks


def test_a_task_past_the_timeout_fails_and_its_thread_is_replaced(
    start_worker: Callable[..., Command],
) -> None:
    stuck = tasks.work_for.enqueue(60.0)
    after = [tasks.square.enqueue(n) for n in range(3)]

    worker = start_worker("--threads", "1", "--task-timeout", "0.5", "--burst")
    assert worker.wait(30) == 0, worker.log

    stuck.refresh()
    assert stuck.status == TaskResultStatus.FAILED
    [error] = stuck.errors
    assert error.exception_class_path == "django_threadmill.exceptions.TaskTimeout"
    assert "ran longer than --task-timeout=0.5s" in error.traceback
    assert f"Task timed out task_id={stuck.id}" in worker.log
    for result in after:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
