"""An acquire Redis has not answered when a stop ends may have reserved tasks nobody hands back;
a recycle's late release waits for it until the recycle's own end (docs/worker.md, Shutdown;
Exit codes).

The process exited 0 with the prefetcher still waiting for such a reply: its tasks, reserved
in Redis, were left to lease expiry and the reaper, which is what exit code 6 says. And a
recycle's late release waited for the prefetcher only until the end the stop first set, from the
grace period: the recycle then waits for its running tasks and sets its end anew, and an acquire
answered in between put its tasks in the closed buffer for nobody to hand back. An acquire
answered as the stop ends counts too, its tasks on their way to the buffer or in it, not yet
taken by the late release. Each test holds the prefetcher (its acquire, its buffering, or what
comes after) on an event: no timing involved.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Acquired, Broker, Reservation
from django_threadmill.worker import shutdown
from django_threadmill.worker.exit_codes import ExitCode
from django_threadmill.worker.process import WorkerProcess
from django_threadmill.worker.shutdown import STOP_MARGIN_S, Shutdown
from django_threadmill.worker.stop_calls import join_until
from tests.support import wait_until

from . import tasks
from .support import worker_options

WAIT_S = 30.0  # a bound on each wait, never reached when the test passes


class HeldAcquire:
    """The broker's acquire, whose reply, if it reserved ``square`` tasks, waits for
    ``let_go`` (a reply Redis has not sent yet)."""

    def __init__(self, broker: Broker, let_go: threading.Event) -> None:
        self.acquire_from = broker.acquire_from
        self.let_go = let_go
        self.held = threading.Event()  # set once a reply is held

    def __call__(self, counts: Mapping[str, int]) -> list[Acquired]:
        replies = self.acquire_from(counts)
        if any(
            reservation.lease.task_path == tasks.square.module_path
            for reply in replies
            for reservation in reply.reservations
        ):
            self.held.set()
            assert self.let_go.wait(WAIT_S), "the test never let the acquire go"
        return replies


@pytest.fixture
def let_go() -> threading.Event:
    return threading.Event()


@pytest.fixture
def process(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch, let_go: threading.Event
) -> Iterator[WorkerProcess]:
    """A worker process of one thread with --grace-period 0, whose acquires of ``square``
    tasks are held until ``let_go``; its threads are not started."""
    process = WorkerProcess(worker_options(grace_period_s=0.0, prefetch=3), backend)
    monkeypatch.setattr(process.broker, "acquire_from", HeldAcquire(process.broker, let_go))
    yield process
    let_go.set()
    process._wakeup.close()
    stop_calls = [t for t in threading.enumerate() if t.name.startswith("threadmill-stop-")]
    for thread in (*process.crew.start_order(), *stop_calls):
        join_until(thread, time.monotonic() + WAIT_S)  # those a stop left behind end once let go


def count_once_runners_ended(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, *first: threading.Event
) -> None:
    """Hold ``process``'s stop just before it counts what it leaves behind (it stops the lease
    keeper then) until each of ``first`` is set and the runners ended. The stop's end comes
    0.5 s after it started, whatever the load: on a loaded machine a runner was still ending
    then, and the process exited as forced, which is not what the tests are about."""
    stop_keeper = process.crew.keeper.stop

    def stop_keeper_once_ended() -> None:
        for event in first:
            event.wait(WAIT_S)
        for runner in (*process.crew.pool.joinable(), process.crew.lane):
            join_until(runner, time.monotonic() + WAIT_S)
        stop_keeper()

    monkeypatch.setattr(process.crew.keeper, "stop", stop_keeper_once_ended)


def held(process: WorkerProcess) -> HeldAcquire:
    """Return ``process``'s held acquire (the fixture's)."""
    acquire = process.broker.acquire_from
    assert isinstance(acquire, HeldAcquire)
    return acquire


def test_an_acquire_unanswered_at_the_stops_end_exits_dropped(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.square.enqueue(1)
    monkeypatch.setattr(shutdown, "STOP_MARGIN_S", 0.5)
    count_once_runners_ended(process, monkeypatch)
    caplog.set_level(logging.WARNING, "django_threadmill.worker.process")
    assert process._start_threads()
    assert held(process).held.wait(WAIT_S), "the prefetcher reserved nothing"

    process.stop()

    assert process.exit_code == ExitCode.DROPPED
    assert (
        "Stopped with work left to the reaper unwritten=0 unreleased=0 acquire_unanswered=True "
        f"worker_id={process.worker_id} (Redis did not take them in time, or an acquire's "
        "tasks did not reach the buffer: Redis did not answer it, or a task module's import "
        "hung; nobody hands those back, and the reaper settles them once their leases lapse: "
        "docs/worker.md, Shutdown)"
    ) in caplog.text
    # The stop's lines are the worker process's, wherever its code lives (worker/shutdown.py):
    # docs/observability.md, Logging names that logger for them.
    said = {r.name for r in caplog.records if r.getMessage().startswith("Stopped with work")}
    assert said == {"django_threadmill.worker.process"}


def test_a_recycles_late_release_waits_for_the_prefetcher_until_the_recycles_end(
    broker: Broker,
    process: WorkerProcess,
    monkeypatch: pytest.MonkeyPatch,
    let_go: threading.Event,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """The stop's first end passes at once (a margin of 0) while the recycle waits for its
    running task; the acquire is answered then, and the recycle's end is the real one."""
    caplog.set_level(logging.INFO, "django_threadmill.worker.process")
    release = tmp_path / "release"
    running = tasks.wait_for_file.enqueue(str(release))
    assert process._start_threads()
    wait_until(lambda: Shutdown(process).running() == 1, "the task running")
    reserved = tasks.square.enqueue(2)
    assert held(process).held.wait(WAIT_S), "the prefetcher reserved nothing"
    monkeypatch.setattr(shutdown, "STOP_MARGIN_S", 0.0)
    process.recycler.recycle()  # as the thread whose task reached --max-tasks does

    stopping = threading.Thread(target=process.stop)
    stopping.start()
    try:
        wait_until(lambda: "Recycling once 1 running task finish" in caplog.text, "the recycle")
        monkeypatch.setattr(shutdown, "STOP_MARGIN_S", STOP_MARGIN_S)
        let_go.set()
        process.crew.prefetcher.join(WAIT_S)
        assert not process.crew.prefetcher.is_alive()
        release.touch()
        stopping.join(WAIT_S)
        assert not stopping.is_alive(), "the recycle never ended"
    finally:
        release.touch()
        stopping.join(WAIT_S)

    keys = broker.queue_keys("default")
    assert broker.client.zcard(keys.leases) == 0  # none left for the reaper
    assert broker.client.zrange(keys.ready, 0, -1) == [reserved.id]
    running.refresh()
    assert running.return_value == "done"
    assert process.exit_code == ExitCode.RECYCLE


class HeldCall:
    """A call of the prefetcher's that waits for ``let_go`` once ``hold`` is set."""

    def __init__(self, call: Callable[..., Any]) -> None:
        self.call = call
        self.hold = threading.Event()  # set by the test: hold the next call
        self.held = threading.Event()  # set once a call is held
        self.let_go = threading.Event()

    def __call__(self, *args: Any) -> Any:
        if self.hold.is_set():
            self.held.set()
            assert self.let_go.wait(WAIT_S), "the test never let the call go"
        return self.call(*args)


def test_an_answered_acquire_still_buffering_at_the_stops_end_exits_dropped(
    process: WorkerProcess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The acquire was answered, but its tasks are on their way to the buffer (held in
    ``put_many``) when the stop ends: they are left to the reaper, and the process says so."""
    put = HeldCall(process.crew.buffer.put_many)
    monkeypatch.setattr(process.crew.buffer, "put_many", put)
    monkeypatch.setattr(process.broker, "acquire_from", held(process).acquire_from)  # unheld
    monkeypatch.setattr(shutdown, "STOP_MARGIN_S", 0.5)
    count_once_runners_ended(process, monkeypatch)
    caplog.set_level(logging.WARNING, "django_threadmill.worker.process")
    put.hold.set()
    tasks.square.enqueue(1)
    assert process._start_threads()
    try:
        assert put.held.wait(WAIT_S), "the prefetcher reserved nothing"
        process.stop()
    finally:
        put.let_go.set()

    assert process.exit_code == ExitCode.DROPPED
    assert "left to the reaper unwritten=0 unreleased=0 acquire_unanswered=True " in caplog.text


def looked_into_the_buffer(monkeypatch: pytest.MonkeyPatch, caller: str) -> threading.Event:
    """Return an event set once the stop call named ``caller`` took what the closed buffer
    kept and released it: a task put there later is left for another call to take."""
    release_kept = Shutdown.release_kept
    looked = threading.Event()

    def release_kept_and_say(stop: Shutdown, left: list[Reservation]) -> bool:
        released = release_kept(stop, left)
        if threading.current_thread().name == caller:
            looked.set()
        return released

    monkeypatch.setattr(Shutdown, "release_kept", release_kept_and_say)
    return looked


def test_tasks_in_the_closed_buffer_the_late_release_has_not_taken_count_as_unreleased(
    process: WorkerProcess,
    monkeypatch: pytest.MonkeyPatch,
    let_go: threading.Event,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The acquire is answered once the stop closed the buffer and the release of what the
    runners handed back looked there, and its task put there; the prefetcher is held after
    that, so the late release, which waits for it, has not taken the task when the stop
    counts (held until then): it is left to the reaper, and counted as unreleased."""
    after = HeldCall(process.crew.prefetcher._held_back.next_due_ms)
    monkeypatch.setattr(process.crew.prefetcher._held_back, "next_due_ms", after)
    looked = looked_into_the_buffer(monkeypatch, "threadmill-stop-release-handed-back")
    count_once_runners_ended(process, monkeypatch, after.held)  # the task in the buffer
    monkeypatch.setattr(shutdown, "STOP_MARGIN_S", 0.5)
    caplog.set_level(logging.WARNING, "django_threadmill.worker.process")
    tasks.square.enqueue(1)
    assert process._start_threads()
    assert held(process).held.wait(WAIT_S), "the prefetcher reserved nothing"
    after.hold.set()
    stopping = threading.Thread(target=process.stop)
    stopping.start()
    try:
        assert looked.wait(WAIT_S), "the stop never released what the runners handed back"
        let_go.set()  # the acquire's reply comes: its task goes to the closed buffer
        assert after.held.wait(WAIT_S), "the prefetcher never got past its buffering"
        stopping.join(WAIT_S)
        assert not stopping.is_alive()
    finally:
        after.let_go.set()
        stopping.join(WAIT_S)

    assert process.exit_code == ExitCode.DROPPED
    assert "left to the reaper unwritten=0 unreleased=1 acquire_unanswered=False " in caplog.text
