"""A stop that begins the moment a worker thread's task is done waits for that thread to end.

The task's done, told to the buffer, is what lets a ``--burst`` process see nothing left and
stop. The thread said it was no longer busy only after it: a stop that came in between held the
thread to the grace period, and with ``--grace-period 0`` reported it still running ("Threads
still running after the grace period ... tasks=none"); the process exited 1. Here the thread
waits right after its done until the stop is waiting for it, as a thread the scheduler left
there would.
"""

import threading
import time

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker import pool as pool_module
from django_threadmill.worker.pool import WorkerPool
from django_threadmill.worker.threads import WorkerThread
from tests.worker.support import role_crashed, thread_parts
from tests.worker.tasks import square


def test_a_thread_whose_task_was_just_done_is_waited_for_past_the_grace_period(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    square.enqueue(3)
    reservations = backend.broker.acquire("default", 1).reservations
    parts = thread_parts(backend, reservations)
    buffer, writer = parts.buffer, parts.writer
    pool = WorkerPool(lambda n: WorkerThread(n, parts, role_crashed), buffer, lambda live: live)
    task_done = threading.Event()
    stop_waits = threading.Event()
    real_done = buffer.done

    def done(*, on_loop: bool = False) -> None:
        real_done(on_loop=on_loop)
        task_done.set()
        stop_waits.wait(60)  # the stop comes now, before this thread goes on

    monkeypatch.setattr(buffer, "done", done)
    joined_until: list[float] = []
    real_join_until = pool_module.join_until

    def join_until(thread: threading.Thread, deadline: float) -> None:
        joined_until.append(deadline)
        stop_waits.set()
        real_join_until(thread, deadline)

    monkeypatch.setattr(pool_module, "join_until", join_until)
    writer.start()
    pool.add(1)
    (thread,) = pool.threads
    try:
        buffer.put_many(reservations)
        assert task_done.wait(60), "the worker thread never finished its task"
        assert buffer.is_idle()  # what --burst waits for before it stops
        buffer.close()
        now = time.monotonic()
        pool.join(deadline=now, end=now + 60)  # a grace period of 0, over at once
        assert joined_until == [now + 60]  # waited for as ending, not as running a task
        assert not thread.is_alive()
    finally:
        stop_waits.set()
        buffer.close()
        thread.join(60)
        writer.stop()
        writer.join(60)
    assert square.get_backend().get_result(reservations[0].lease.task_id).return_value == 9
