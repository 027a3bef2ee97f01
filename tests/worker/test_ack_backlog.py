"""Outcomes that Redis refuses or delays pile up in the ack writer; past a bound the prefetcher
reserves nothing more until they are written.

It once went on reserving and running: with acks failing (replicas away under
durability="replicated") a worker ran its whole backlog and held 40,000 outcomes in memory,
all lost in a crash.
"""

import logging

import pytest

from django_threadmill.worker import prefetcher as prefetcher_module
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.prefetcher import UNWRITTEN_CAP, Prefetcher
from testproject.example.tasks import add

from .support import WatchedBroker


def test_no_reservation_while_too_many_outcomes_wait(
    watched_broker: WatchedBroker,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(prefetcher_module, "UNWRITTEN_LOOK_S", 0)
    broker = watched_broker
    for n in range(3):
        add.enqueue(n, n)
    unwritten = [UNWRITTEN_CAP + 1]
    buffer = TaskBuffer(8, lambda reservation: False)
    prefetcher = Prefetcher(
        broker,
        "worker-a",
        ("default",),
        buffer,
        HeldLeases(),
        burst=False,
        is_settled=lambda: False,
        unwritten=lambda: unwritten[0],
        on_empty=lambda: None,
        on_refused=lambda: None,
        on_crash=lambda: None,
    )
    caplog.set_level(logging.INFO, "django_threadmill")

    for _ in range(3):
        prefetcher._round()  # the loop's body, run here: the thread is never started
    assert broker.acquires == 0
    assert buffer.waiting() == 0
    assert caplog.text.count("Reserving nothing until acks are written") == 1

    unwritten[0] = UNWRITTEN_CAP  # written down to the bound: reserving again
    prefetcher._round()
    assert broker.acquires == 1
    assert buffer.waiting() == 3
    assert "Acks written, reserving again" in caplog.text
