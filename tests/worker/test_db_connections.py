"""Django's close_old_connections runs before each task once the worker thread has a connection.

It closes connections past CONN_MAX_AGE or broken; the tests' SQLite database lives in memory,
which Django never closes, so they watch the calls. The executor runs in a thread of its own,
as in a worker: Django's connections are per thread.
"""

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import Task
from django_threadmill.worker import db_connections
from django_threadmill.worker.executor import Executor
from testproject.example.tasks import record_pid, touch_database

pytestmark = pytest.mark.django_db(transaction=True)


def in_a_worker_thread[T](work: Callable[[], T]) -> T:
    """Run ``work`` in a new thread, which closes its connections when done; return its value."""
    results: list[T] = []

    def target() -> None:
        try:
            results.append(work())
        finally:
            # Django's close() keeps an in-memory SQLite database open, so this thread's own
            # connection to it is closed here, or it is collected open (a ResourceWarning on
            # Python 3.13, raised in whichever test runs then).
            for opened in connections.all(initialized_only=True):
                if opened.connection is not None:
                    opened.connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=60)
    assert results, "the worker thread failed or hung; see the captured output"
    return results[0]


def run_each(backend: ThreadmillTaskBackend, tasks: list[Task]) -> list[bool]:
    """Enqueue and run ``tasks`` in order in one new thread; after each, is a connection open?"""
    for task in tasks:
        task.enqueue()
    reservations = backend.broker.acquire("default", len(tasks)).reservations
    executor = Executor("db-worker", backend.alias, type(backend))

    def work() -> list[bool]:
        opened = []
        for reservation in reservations:
            executor.run(reservation, now_ms())
            opened.append(connection.connection is not None)
        return opened

    return in_a_worker_thread(work)


def test_a_thread_without_a_connection_never_looks_for_stale_ones(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[None] = []
    real = db_connections.close_old_connections
    monkeypatch.setattr(db_connections, "close_old_connections", lambda: looked.append(real()))
    assert run_each(backend, [record_pid, record_pid]) == [False, False]
    assert looked == []
    # A new thread, with connections of its own: the first task opens one.
    assert run_each(backend, [touch_database, record_pid, record_pid]) == [True, True, True]
    assert len(looked) == 2  # before each task after the one that connected
