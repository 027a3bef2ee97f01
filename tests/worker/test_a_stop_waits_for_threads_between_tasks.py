"""A stop waits for the worker threads between tasks to end, past its grace period: the buffer
is closed, they are only ending. The grace period bounds the threads running a task.

Held to the grace period, a thread a ``--burst --grace-period 0`` process had just started
when it found its queues empty was reported still running ("Threads still running after the
grace period ... tasks=none"), and the process exited 1, which its supervisor logged as a
death. So was the thread whose task had just been done: it told the buffer (which let the
burst end) before it said it was no longer busy.
"""

import threading
import time
from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker import pool as pool_module
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import WorkerPool
from django_threadmill.worker.threads import WorkerThread
from tests.worker.support import role_crashed, thread_parts
from tests.worker.tasks import square

from .test_pool import StubThread

type Joins = list[tuple[threading.Thread, float]]
type OnJoin = Callable[[threading.Thread], None]


class EndingThread(StubThread):
    """A stub worker thread that runs ``work`` and says when it has ended, as a real one does."""

    def __init__(self, work: Callable[[], object]) -> None:
        super().__init__(work)
        self.settled = threading.Event()

    def run(self) -> None:
        try:
            super().run()
        finally:
            self.settled.set()


@pytest.fixture
def joins(monkeypatch: pytest.MonkeyPatch) -> tuple[Joins, list[OnJoin]]:
    """Record each thread the pool's join waits for and until when; call the hooks first."""
    joined: Joins = []
    hooks: list[OnJoin] = []
    real_join_until = pool_module.join_until

    def join_until(thread: threading.Thread, deadline: float) -> None:
        joined.append((thread, deadline))
        for hook in hooks:
            hook(thread)
        real_join_until(thread, deadline)

    monkeypatch.setattr(pool_module, "join_until", join_until)
    return joined, hooks


def test_a_thread_between_tasks_is_waited_for_past_the_grace_period(
    joins: tuple[Joins, list[OnJoin]],
) -> None:
    joined, hooks = joins
    running_may_end = threading.Event()
    idle_may_end = threading.Event()
    works = iter([running_may_end.wait, idle_may_end.wait])
    pool = WorkerPool(
        lambda n: EndingThread(next(works)),  # type: ignore[arg-type,return-value]
        TaskBuffer(4, lambda reservation: False),
        lambda live: live,
    )
    pool.add(2)
    running, idle = pool.threads
    running.busy = True
    hooks.append(
        lambda thread: idle_may_end.set() if thread is idle else None
    )  # ends once waited for
    now = time.monotonic()
    try:
        pool.join(deadline=now, idle_until=now + 60)  # a grace period of 0, over at once
        assert not idle.is_alive()
        assert running.is_alive()  # its task was not waited for past the grace period
        assert joined == [(running, now), (idle, now + 60)]
    finally:
        running_may_end.set()
        idle_may_end.set()
        for thread in pool.threads:
            thread.join(5)


def test_a_thread_whose_task_was_just_done_is_waited_for_past_the_grace_period(
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    joins: tuple[Joins, list[OnJoin]],
) -> None:
    """The thread waits right after its done until the stop waits for it, as a thread the
    scheduler left there would."""
    joined, hooks = joins
    square.enqueue(3)
    reservations = backend.broker.acquire("default", 1).reservations
    parts = thread_parts(backend, reservations)
    buffer, writer = parts.buffer, parts.writer
    pool = WorkerPool(lambda n: WorkerThread(n, parts, role_crashed), buffer, lambda live: live)
    task_done, stop_waits = threading.Event(), threading.Event()
    real_done = buffer.done

    def done(*, on_loop: bool = False) -> None:
        real_done(on_loop=on_loop)
        task_done.set()
        stop_waits.wait(60)  # the stop comes now, before this thread goes on

    monkeypatch.setattr(buffer, "done", done)
    hooks.append(lambda thread: stop_waits.set())
    writer.start()
    pool.add(1)
    (thread,) = pool.threads
    try:
        buffer.put_many(reservations)
        assert task_done.wait(60), "the worker thread never finished its task"
        assert buffer.is_idle()  # what --burst waits for before it stops
        buffer.close()
        now = time.monotonic()
        pool.join(deadline=now, idle_until=now + 60)  # a grace period of 0, over at once
        assert joined == [(thread, now + 60)]  # waited for as ending, not as running a task
        assert not thread.is_alive()
    finally:
        stop_waits.set()
        buffer.close()
        thread.join(60)
        writer.stop()
        writer.join(60)
    assert square.get_backend().get_result(reservations[0].lease.task_id).return_value == 9
