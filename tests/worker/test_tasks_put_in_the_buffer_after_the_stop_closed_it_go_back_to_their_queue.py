"""Tasks put in the buffer after the stop closed it go back to their queue (docs/worker.md,
Shutdown): those an acquire brings back, and one a worker thread took unsorted as it closed.

With --grace-period 0 the stop joins the prefetcher not at all before it closes the buffer and
releases what waited there. An acquire still on its way then put its tasks in the closed buffer,
which keeps them, and nothing handed them back: they waited, reserved, for their lease to lapse
and for the reaper. The first task of a module a process has not imported is taken unsorted: the
thread imports the module, finds the buffer closed, and hands the task back to it. The late
release had taken what the buffer kept once the prefetcher ended, before such a thread handed
its task back: the process exited 0 and the task waited for the reaper (a stop signal as a
worker started, about 1 run in 300 under load). Each test holds the prefetcher's acquire, or the
module's import, until the stop has closed the buffer (or has returned): no timing involved.
"""

import logging
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Acquired, Broker, Reservation
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker import shutdown
from django_threadmill.worker.exit_codes import ExitCode
from django_threadmill.worker.process import WorkerProcess

from . import import_waits_tasks, support, tasks
from .support import worker_options

WAIT_S = 30.0  # a bound on each wait, never reached when the test passes


class HeldAcquire:
    """The broker's acquire, whose reply (the tasks reserved in Redis) waits for ``let_go``."""

    def __init__(self, broker: Broker, let_go: threading.Event) -> None:
        self.acquire_from = broker.acquire_from
        self.let_go = let_go
        self.reserved: list[str] = []
        self.held = threading.Event()  # set once a reply is held

    def __call__(self, counts: Mapping[str, int]) -> list[Acquired]:
        replies = self.acquire_from(counts)
        self.reserved += [r.lease.task_id for reply in replies for r in reply.reservations]
        if self.reserved and not self.let_go.is_set():
            self.held.set()
            assert self.let_go.wait(WAIT_S), "the test never let the acquire go"
        return replies


@pytest.fixture
def make_process(backend: ThreadmillTaskBackend) -> Iterator[Callable[..., WorkerProcess]]:
    """Make worker processes of one thread, with ``changes`` to their options; once the test
    ended, wait for the threads their stops left behind, which end once let go."""
    made: list[WorkerProcess] = []

    def make(**changes: Any) -> WorkerProcess:
        made.append(WorkerProcess(worker_options(**changes), backend))
        return made[-1]

    yield make
    stop_calls = [t for t in threading.enumerate() if t.name.startswith("threadmill-stop-")]
    for process in made:
        process._wakeup.close()
        crew = process.crew
        for thread in (crew.prefetcher, crew.writer, crew.keeper, crew.drainer, *stop_calls):
            thread.join(WAIT_S)


@pytest.fixture
def process(make_process: Callable[..., WorkerProcess]) -> WorkerProcess:
    """A worker process of one thread, reading ahead 3 tasks, with --grace-period 0."""
    return make_process(grace_period_s=0.0, prefetch=3)


def held_acquire(
    monkeypatch: pytest.MonkeyPatch, process: WorkerProcess, let_go: threading.Event
) -> HeldAcquire:
    """Hold ``process``'s acquires until ``let_go``, and start its threads; return once the
    prefetcher's acquire has reserved tasks and is held."""
    acquire = HeldAcquire(process.broker, let_go)
    monkeypatch.setattr(process.broker, "acquire_from", acquire)
    assert process._start_threads()
    assert acquire.held.wait(WAIT_S), "the prefetcher reserved nothing"
    return acquire


def test_tasks_an_acquire_brings_after_the_close_are_released_by_the_stop(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    process: WorkerProcess,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    enqueued = [tasks.square.enqueue(n).id for n in range(3)]
    closed = threading.Event()
    close = process.crew.buffer.close

    def close_then_let_go() -> list[Reservation]:
        unstarted = close()
        closed.set()
        return unstarted

    monkeypatch.setattr(process.crew.buffer, "close", close_then_let_go)
    acquire = held_acquire(monkeypatch, process, closed)
    assert sorted(acquire.reserved) == sorted(enqueued)

    process.stop()

    keys = broker.queue_keys("default")
    assert broker.client.zcard(keys.leases) == 0  # none left for the reaper
    assert broker.client.zrange(keys.ready, 0, -1) == enqueued  # in their original place
    assert process.exit_code == ExitCode.OK


def test_a_prefetcher_still_held_at_the_end_does_not_hold_the_stop(
    broker: Broker,
    process: WorkerProcess,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The late release waits for the prefetcher only until the stop's end: past it, the
    process exits without them, naming the prefetcher, as for any call Redis holds."""
    tasks.square.enqueue(1)
    monkeypatch.setattr(shutdown, "STOP_MARGIN_S", 0.5)
    caplog.set_level(logging.WARNING, "django_threadmill.worker.process")
    let_go = threading.Event()
    held_acquire(monkeypatch, process, let_go)

    stopping = threading.Thread(target=process.stop)
    stopping.start()
    stopping.join(WAIT_S)
    try:
        assert not stopping.is_alive(), "the stop waited for the held acquire"
        assert "Stop deadline passed, exiting without threads names=" in caplog.text
        assert "threadmill-prefetcher" in caplog.text
    finally:
        let_go.set()
        stopping.join(WAIT_S)


def test_a_task_a_thread_took_unsorted_as_the_buffer_closed_is_released_by_the_stop(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    make_process: Callable[..., WorkerProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task_id = import_waits_tasks.imported_as_the_stop_came.enqueue(1).id
    monkeypatch.delitem(sys.modules, import_waits_tasks.__name__)  # the worker imports it anew
    process = make_process(grace_period_s=WAIT_S)
    # The stop's close, then the late release's, once the prefetcher has ended.
    closes: list[list[Reservation]] = []
    late_release_looked = threading.Event()
    close = process.crew.buffer.close

    def counted_close() -> list[Reservation]:
        closes.append(close())
        if len(closes) == 2:
            late_release_looked.set()
        return closes[-1]

    importing = threading.Event()

    def import_until_the_late_release_looked() -> None:
        importing.set()
        assert late_release_looked.wait(WAIT_S), "the stop's late release never looked"

    monkeypatch.setattr(process.crew.buffer, "close", counted_close)
    monkeypatch.setattr(support, "at_task_import", import_until_the_late_release_looked)
    assert process._start_threads()
    assert importing.wait(WAIT_S), "no worker thread imported the task's module"

    process.stop()

    keys = broker.queue_keys("default")
    assert broker.client.zcard(keys.leases) == 0  # none left for the reaper
    assert broker.client.zrange(keys.ready, 0, -1) == [task_id]
    assert backend.get_result(task_id).status == TaskResultStatus.READY
    assert process.exit_code == ExitCode.OK
