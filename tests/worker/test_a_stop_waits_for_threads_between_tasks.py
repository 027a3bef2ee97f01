"""A stop waits for the worker threads between tasks to end, whatever its grace period: the
buffer is closed, they are only ending. The grace period bounds the threads running a task.

Held to the grace period, a thread a ``--burst --grace-period 0`` process had just started when
it found its queues empty was reported still running ("Threads still running after the grace
period ... tasks=none"), and the process exited 1, which its supervisor logged as a death.
"""

import threading
import time
from collections.abc import Callable

import pytest

from django_threadmill.worker import pool as pool_module
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import WorkerPool

from .test_pool import StubThread


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


def test_a_thread_between_tasks_is_waited_for_past_the_grace_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
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
    real_join_until = pool_module.join_until

    def join_until(thread: threading.Thread, deadline: float) -> None:
        if thread is idle:  # it ends only once the stop waits for it
            idle_may_end.set()
        real_join_until(thread, deadline)

    monkeypatch.setattr(pool_module, "join_until", join_until)
    now = time.monotonic()
    try:
        pool.join(deadline=now, end=now + 60)  # a grace period of 0, over at once
        assert not idle.is_alive()
        assert running.is_alive()  # its task was not waited for past the grace period
    finally:
        running_may_end.set()
        idle_may_end.set()
        for thread in pool.threads:
            thread.join(5)
