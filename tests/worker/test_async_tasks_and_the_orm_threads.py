"""What async tasks leave in the threads their sync calls run in (docs/worker.md, The ORM from
async tasks).

A connection opened through ``sync_to_async(thread_sensitive=False)`` is closed once its call
ends, as a request's is: it stayed open for the life of the process, past CONN_MAX_AGE and
through a database restart. A task timed out while its query holds asgiref's one ORM thread is
recorded at its deadline: its ``task_finished`` ran in that thread, behind the query.
"""

from collections.abc import Callable
from pathlib import Path

from django_threadmill.compat import TaskResultStatus
from tests.support import Command, running, wait_until
from tests.worker.async_tasks import connects_off_the_orm_thread, holds_the_orm_thread
from tests.worker.test_thread_connection_closed_after_task import database_worker, open_files


def test_a_connection_opened_off_the_orm_thread_is_closed_after_its_call(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, database = database_worker(start_worker, tmp_path)
    with running(worker):
        [pid] = worker.child_pids()
        result = connects_off_the_orm_thread.enqueue()
        wait_until(lambda: result.refresh() or result.is_finished, "the task's outcome")
        assert result.status == TaskResultStatus.SUCCESSFUL
        wait_until(
            lambda: str(database) not in open_files(pid),
            "the executor thread's connection closed",
            timeout_s=20,
        )


def test_a_task_timed_out_inside_a_held_orm_call_is_recorded_at_its_deadline(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    worker = start_worker("--threads", "1", "--task-timeout", "1")
    try:
        with running(worker):
            result = holds_the_orm_thread.enqueue(str(release), str(started))
            wait_until(started.exists, "the task's call in the ORM thread")
            wait_until(
                lambda: result.refresh() or result.is_finished,
                "the timed-out task's outcome, the ORM thread still held",
                timeout_s=20,
            )
            assert not release.exists()
            release.touch()
    finally:
        release.touch()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class_path for error in result.errors] == [
        "django_threadmill.exceptions.TaskTimeout"
    ]
