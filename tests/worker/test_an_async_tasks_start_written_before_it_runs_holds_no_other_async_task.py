"""An async task whose start notice is written before it runs (its last run in this process
outlived its lease: docs/worker.md, Leases) waits for Redis off the event loop: the other async
tasks of the process run meanwhile.

That write is a Redis call, made from the loop's own thread: while Redis took to answer (just
after an outage, when such runs happen), every other async task of the process waited, and the
loop monitor named the task as making a blocking call inside it.

The event loop lane alone, with a real Redis; the write waits until the test lets it go on.
"""

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Start
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.ack_writer import StartNow
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.event_loop import EventLoopLane
from tests.support import wait_until
from tests.worker import async_tasks
from tests.worker.support import role_crashed, thread_parts

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes


def test_another_async_task_runs_while_an_outlived_tasks_start_is_written(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runs = str(tmp_path / "runs.log")
    outlived = async_tasks.nap.enqueue(0.0, runs)
    other = async_tasks.nap.enqueue(0.0, runs)
    reservations = backend.broker.acquire("default", 2).reservations
    parts = thread_parts(backend, reservations)
    parts = dataclasses.replace(parts, buffer=TaskBuffer(4, lambda reservation: True))
    first = next(r for r in reservations if r.lease.task_id == outlived.id)
    parts.held.discard([first.lease])  # its last run here outlived its lease
    parts.held.note_if_outlived(first.lease)
    parts.held.add([first.lease])

    writing, redis_answers = threading.Event(), threading.Event()
    start_now = parts.writer.start_now

    def slow_start_now(start: Start) -> StartNow:
        writing.set()
        assert redis_answers.wait(WAIT_S), "the test never let Redis answer"
        return start_now(start)

    monkeypatch.setattr(parts.writer, "start_now", slow_start_now)
    threads_before = set(threading.enumerate())
    lane = EventLoopLane(10, parts, role_crashed)
    parts.writer.start()
    lane.start()
    try:
        parts.buffer.put_many([first, *(r for r in reservations if r is not first)])
        assert writing.wait(WAIT_S)
        wait_until(
            lambda: backend.get_result(other.id).status == TaskResultStatus.SUCCESSFUL,
            "the other async task running while the start notice waits for Redis",
        )
    finally:
        redis_answers.set()
        wait_until(lambda: lane.idle.is_set(), "the lane's tasks ending")
        lane.stop()
        lane.finish_running(time.monotonic())
        lane.join(WAIT_S)
        parts.writer.stop()
        parts.writer.join(WAIT_S)
        # The loop's executor, shut down as the loop closed, without waiting for its thread.
        wait_until(lambda: set(threading.enumerate()) <= threads_before, "its threads ending")
    assert backend.get_result(outlived.id).status == TaskResultStatus.SUCCESSFUL
