"""Django's close_old_connections runs before each task once the worker thread has a connection.

It closes connections past CONN_MAX_AGE or broken; the tests' SQLite database lives in memory,
which Django never closes, so they watch the calls. The executor runs in a thread of its own,
as in a worker: Django's connections are per thread.
"""

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.codec.results import parse_error
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import Task
from django_threadmill.worker import db_connections
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.threads import WorkerThread
from testproject.example.tasks import record_pid, touch_database
from tests.worker.misbehaving import leaves_a_transaction_open
from tests.worker.support import role_crashed, thread_parts

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
    # After each task from the one that connected on, and before each task after it.
    assert len(looked) == 5


def test_a_worker_thread_that_ends_closes_the_connections_it_opened(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retired thread closes its connection instead of leaving it to the garbage collector.

    Django keeps an in-memory SQLite database open on close(), so the test watches which
    threads call it."""
    closed_in: list[int] = []
    wrapper = type(connections["default"])
    real_close = wrapper.close

    def watched_close(self: Any) -> None:
        closed_in.append(threading.get_ident())
        real_close(self)
        in_worker = threading.current_thread().name.startswith("threadmill-worker")
        if in_worker and self.connection is not None:
            self.connection.close()  # the in-memory database's, as in_a_worker_thread does

    monkeypatch.setattr(wrapper, "close", watched_close)
    touch_database.enqueue()
    reservations = backend.broker.acquire("default", 1).reservations
    # The outcome is written before the thread takes its next turn.
    parts = thread_parts(backend, reservations, worker_id="db-worker", sync_ack=True)
    buffer, writer = parts.buffer, parts.writer
    thread = WorkerThread(0, parts, role_crashed)
    writer.start()
    thread.start()
    try:
        buffer.put_many(reservations)
        buffer.retire_one()
        thread.join(timeout=60)
    finally:
        writer.stop()
        writer.join(timeout=60)
    assert not thread.is_alive()
    assert thread.retired
    assert thread.ident in closed_in
    assert touch_database.get_backend().get_result(reservations[0].lease.task_id).return_value == 1


def test_a_transaction_the_task_left_open_is_rolled_back_and_fails_it(
    backend: ThreadmillTaskBackend,
) -> None:
    """Left open, the next task's connection check closed the connection inside it, and every
    later database call of the thread failed ("Cannot operate on a closed database")."""
    leaving = leaves_a_transaction_open.enqueue()
    touch_database.enqueue()
    reservations = backend.broker.acquire("default", 2).reservations
    executor = Executor("db-worker", backend.alias, type(backend))

    def work() -> tuple[list[Finish], bool]:
        db_connections.mark_worker_thread()
        finishes = [executor.run(reservation, now_ms()) for reservation in reservations]
        return finishes, connection.in_atomic_block

    finishes, still_open = in_a_worker_thread(work)

    assert [finish.outcome for finish in finishes] == [Outcome.FAILED, Outcome.SUCCESSFUL]
    assert finishes[0].lease.task_id == leaving.id
    error = parse_error(finishes[0].value)
    assert error.exception_class_path == "django_threadmill.exceptions.TransactionLeftOpen"
    assert "block it never left (database default); it was rolled back" in error.traceback
    assert not still_open
