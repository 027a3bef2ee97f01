"""A worker thread closes its database connection once its task ends, as Django does once a
request ends: with CONN_MAX_AGE 0 a thread waiting for its next task held it open, for as
long as no task came (docs/worker.md, Sizing)."""

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import OperationalError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker import db_connections
from django_threadmill.worker.executor import Executor
from testproject.example.tasks import touch_database
from tests.support import Command, running, wait_until


def open_files(pid: int) -> set[str]:
    """Return the paths of the files process ``pid`` holds open."""
    fds = Path(f"/proc/{pid}/fd")
    return {os.readlink(fds / fd) for fd in os.listdir(fds) if (fds / fd).is_symlink()}


def database_worker(start_worker: Callable[..., Command], tmp_path: Path) -> tuple[Command, Path]:
    """Start a worker of one thread on a database file of the test's own; return it and the
    file, whose opening its process's open files show."""
    database = tmp_path / "db.sqlite3"
    return start_worker("--threads", "1", extra_env={"THREADMILL_DB": str(database)}), database


def test_a_thread_closes_its_connection_when_its_task_ends(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    worker, database = database_worker(start_worker, tmp_path)
    with running(worker):
        [pid] = worker.child_pids()
        assert str(database) not in open_files(pid)
        result = touch_database.enqueue()
        wait_until(lambda: result.refresh() or result.is_finished, "the task's outcome")
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert str(database) not in open_files(pid)


@pytest.mark.django_db(transaction=True)
def test_a_close_that_fails_after_a_task_is_logged_and_the_outcome_kept(
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fails() -> None:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(db_connections, "close_old_connections", fails)
    touch_database.enqueue()
    [reservation] = backend.broker.acquire("default", 1).reservations
    executor = Executor("db-worker", backend.alias, type(backend))
    finishes: list[Finish | None] = []

    def worker_thread() -> None:
        db_connections.mark_worker_thread()
        try:
            finishes.append(executor.run(reservation, now_ms()))
        finally:
            for opened in db_connections.connections.all(initialized_only=True):
                if opened.connection is not None:
                    opened.connection.close()  # in-memory SQLite: Django's close() keeps it

    thread = threading.Thread(target=worker_thread)
    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        thread.start()
        thread.join(timeout=60)

    [finish] = finishes
    assert finish is not None
    assert finish.outcome is Outcome.SUCCESSFUL
    assert (
        "Closing stale database connections failed error=OperationalError('server closed the "
        "connection unexpectedly')" in caplog.messages
    )
