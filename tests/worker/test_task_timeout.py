"""--task-timeout records a stuck task as FAILED and a fresh thread carries on."""

import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_finished
from tests.support import Command, wait_until
from tests.worker import tasks


def test_a_task_past_the_timeout_fails_and_its_thread_is_replaced(
    start_worker: Callable[..., Command],
) -> None:
    stuck = tasks.work_for.enqueue(60.0)
    after = [tasks.square.enqueue(n) for n in range(3)]

    worker = start_worker("--threads", "1", "--task-timeout", "0.5", "--burst")
    assert worker.wait(60) == 0, worker.log

    stuck.refresh()
    assert stuck.status == TaskResultStatus.FAILED
    [error] = stuck.errors
    assert error.exception_class_path == "django_threadmill.exceptions.TaskTimeout"
    assert "ran longer than --task-timeout=0.5s" in error.traceback
    assert f"Task timed out task_id={stuck.id}" in worker.log
    for result in after:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_the_timeout_holds_through_a_stops_grace_period(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """The watchdog was stopped before the grace period: a hung task then held the stop for
    the whole of it, the process exited 1, and the reaper recorded LeaseExpired (and retried
    it) instead of the TaskTimeout the task had earned."""
    stuck = tasks.wait_for_file.enqueue(str(tmp_path / "never"))
    command = start_worker("--threads", "1", "--task-timeout", "1", "--grace-period", "600")
    wait_until(
        lambda: backend.get_result(stuck.id).status == TaskResultStatus.RUNNING,
        "the task running",
    )
    command.signal(signal.SIGTERM)
    assert command.wait(60) == 0, command.log
    result = backend.get_result(stuck.id)
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == [
        "django_threadmill.exceptions.TaskTimeout"
    ]


@pytest.mark.usefixtures("logging_put_back")
def test_a_timed_out_task_that_returns_later_says_nothing_more(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    """task_finished is sent once, FAILED, when the watchdog ends the attempt: none was sent
    then, and the abandoned thread sent one with SUCCESSFUL (or logged a retry that was never
    scheduled) once its task returned."""
    gate = tmp_path / "gate"
    heard: list[tuple[TaskResultStatus, list[str]]] = []

    def on_finished(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        heard.append((task_result.status, [e.exception_class_path for e in task_result.errors]))

    stuck = tasks.wait_for_file.enqueue(str(gate))
    task_finished.connect(on_finished)
    try:
        call_command(
            "threadmill_worker",
            *("--processes", "0", "--burst", "--threads", "1", "--task-timeout", "0.5"),
            *("--verbosity", "0"),
        )
        assert backend.get_result(stuck.id).status == TaskResultStatus.FAILED
        [abandoned] = [t for t in threading.enumerate() if t.name == "threadmill-worker-1"]
        gate.touch()
        abandoned.join(30)
        assert not abandoned.is_alive()
    finally:
        task_finished.disconnect(on_finished)
    assert heard == [(TaskResultStatus.FAILED, ["django_threadmill.exceptions.TaskTimeout"])]
    assert backend.get_result(stuck.id).status == TaskResultStatus.FAILED


def test_timed_out_tasks_count_toward_max_tasks(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """Only finished tasks counted: a process whose tasks hang and time out piled up abandoned
    threads for ever instead of recycling."""
    never = str(tmp_path / "never")
    stuck = [tasks.wait_for_file.enqueue(never) for _ in range(2)]
    command = start_worker(
        *("--threads", "1", "--task-timeout", "0.5", "--max-tasks", "2", "--max-tasks-jitter", "0")
    )
    try:
        command.wait_for_log(r"Worker process stopped .*exit_code=3")
    finally:
        command.close()
    for result in stuck:
        assert backend.get_result(result.id).status == TaskResultStatus.FAILED
