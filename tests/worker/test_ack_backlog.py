"""Outcomes that Redis refuses or delays pile up in the ack writer; past a bound the prefetcher
reserves nothing more until they are written. Start notices held back until due are no such pile.

It once went on reserving and running: with acks failing (replicas away under
durability="replicated") a worker ran its whole backlog and held 40,000 outcomes in memory,
all lost in a crash.
"""

import logging

import pytest

from django_threadmill.broker import Lease, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.worker import backpressure
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.backpressure import UNWRITTEN_CAP, UNWRITTEN_WARN_S
from django_threadmill.worker.buffer import Runners, TaskBuffer
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.prefetcher import Prefetcher
from django_threadmill.worker.progress import PendingProgress
from testproject.example.tasks import add
from tests.support import HandClock

from .support import WatchedBroker


def test_no_reservation_while_too_many_outcomes_wait(
    watched_broker: WatchedBroker,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(backpressure, "UNWRITTEN_LOOK_S", 0)
    broker = watched_broker
    for n in range(3):
        add.enqueue(n, n)
    unwritten = [UNWRITTEN_CAP + 1]
    buffer = TaskBuffer(8, lambda reservation: False)
    clock = HandClock(100.0)
    prefetcher = Prefetcher(
        broker,
        "worker-a",
        ("default",),
        buffer,
        HeldLeases(),
        burst=False,
        is_settled=lambda: False,
        unwritten=lambda: unwritten[0],
        unwritten_chars=lambda: 0,
        on_empty=lambda: None,
        on_refused=lambda error: None,
        on_crash=lambda: None,
        limited=frozenset(),
        runners=lambda: Runners(threads=8, loop=0),
        clock=clock,
    )
    caplog.set_level(logging.INFO, "django_threadmill")

    for _ in range(3):
        prefetcher._round()  # the loop's body, run here: the thread is never started
    assert broker.acquires == 0
    assert buffer.waiting() == 0
    holds = [r for r in caplog.records if "Reserving nothing until acks" in r.getMessage()]
    # Said once, as flow control: a process short of CPU for its writer holds for a moment.
    assert [r.levelno for r in holds] == [logging.INFO]

    clock.now += UNWRITTEN_WARN_S  # a hold this long means Redis refuses or delays acks
    prefetcher._round()
    prefetcher._round()
    holds = [r for r in caplog.records if "Reserving nothing until acks" in r.getMessage()]
    assert [r.levelno for r in holds] == [logging.INFO, logging.WARNING]
    assert "Redis refuses or delays them" in holds[1].getMessage()

    unwritten[0] = UNWRITTEN_CAP  # written down to the bound: reserving again
    prefetcher._round()
    assert broker.acquires == 1
    assert buffer.waiting() == 3
    assert "Acks written, reserving again" in caplog.text


def test_start_notices_held_back_are_not_a_backlog(watched_broker: WatchedBroker) -> None:
    """A start notice waits up to 20 ms on purpose, one per running task: 500 async tasks in
    flight hold 500, and counted in the bound they stopped reservations in a healthy run."""
    writer = AckWriter(
        watched_broker,
        "worker-a",
        HeldLeases(),
        PendingProgress(),
        on_written=lambda: None,
        on_crash=lambda: None,
    )
    started_ms = now_ms()
    for n in range(3):
        writer.submit_start(Start(lease=Lease(f"t{n}", "default", "1"), started_ms=started_ms))
    held: dict[Lease, tuple[Start, float]] = {}
    writer._write(writer._take_all(), held, flush=False)  # the loop's body: none is due yet

    assert len(held) == 3
    assert writer.pending() == 3  # still unwritten: a stop flushes them
    assert writer.backlog() == 0  # but nothing waits on Redis
    writer.submit_start(Start(lease=Lease("t3", "default", "1"), started_ms=started_ms))
    assert writer.backlog() == 1  # not taken yet: the writer has it to do
