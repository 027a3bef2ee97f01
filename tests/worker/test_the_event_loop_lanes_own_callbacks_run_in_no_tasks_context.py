"""The event loop lane's own callbacks (``_admit``, and the beats and ends it schedules) run in
no task's context, whichever thread woke the loop.

A task sorted in the loop's executor (its module imported there, ``asyncio.to_thread``) wakes
the loop from that task's context: the lane's callbacks then ran in it, so the loop monitor,
which names the task whose context the running callback carries, would blame that task for a
stall in the lane's own work (many tasks started at once).

The event loop lane alone, with a real Redis.
"""

import dataclasses
import threading
import time
from contextvars import copy_context

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Reservation
from django_threadmill.worker import loop_culprits
from django_threadmill.worker.buffer import TaskBuffer, Unsorted
from django_threadmill.worker.event_loop import EventLoopLane
from tests.support import wait_until
from tests.worker import async_tasks
from tests.worker.support import role_crashed, thread_parts

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes


class WatchedBuffer(TaskBuffer):
    """A buffer that notes the attempt the context of each ``take_async`` call names."""

    def __init__(self) -> None:
        super().__init__(4, lambda reservation: True)
        self.seen: list[Reservation | None] = []

    def take_async(self, most: int) -> list[Reservation | Unsorted]:
        self.seen.append(loop_culprits.attempt_of.get())
        return super().take_async(most)


def test_a_loop_woken_from_a_tasks_context_admits_in_no_tasks_context(
    backend: ThreadmillTaskBackend,
) -> None:
    async_tasks.nap.enqueue(0.0, "/dev/null")
    # Only its context is used: it never reaches the lane.
    [reservation] = backend.broker.acquire("default", 1).reservations
    buffer = WatchedBuffer()
    parts = thread_parts(backend, [reservation])
    lane = EventLoopLane(10, dataclasses.replace(parts, buffer=buffer), role_crashed)
    threads_before = set(threading.enumerate())
    lane.start()
    try:
        wait_until(lambda: lane.event_loop is not None and buffer.seen, "the loop's first admit")
        woken_from = copy_context()
        woken_from.run(loop_culprits.attempt_of.set, reservation)
        woken_from.run(lane.nudge)  # as a sort in the loop's executor does
        wait_until(lambda: len(buffer.seen) >= 2, "the admit the nudge asked for")
        assert buffer.seen == [None, None]
    finally:
        lane.stop()
        lane.finish_running(time.monotonic())
        lane.join(WAIT_S)
        wait_until(lambda: set(threading.enumerate()) <= threads_before, "its threads ending")
