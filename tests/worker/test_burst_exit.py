"""--burst stops only on a look at every queue that nothing landed during: a workflow's next
step once waited for a process that had stopped (a workflow left unfinished)."""

import threading
import time
from collections.abc import Callable, Mapping

from django_threadmill.broker import Acquired
from django_threadmill.worker.buffer import Runners, TaskBuffer
from django_threadmill.worker.fetch_plan import PROBE_EVERY_S
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.prefetcher import Prefetcher
from testproject.example.tasks import echo
from tests.support import HandClock

from .support import WatchedBroker, idle_prefetcher


class NudgedDuringTheFetch(WatchedBroker):
    """The real broker, whose acquire finds nothing while ``during_fetch`` runs: there, the
    process's drainer enqueues a workflow's next step and nudges the prefetcher."""

    def __init__(self, broker: WatchedBroker, during_fetch: Callable[[], None]) -> None:
        super().__init__(broker)
        self.during_fetch = during_fetch

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        acquired = super().acquire_from(counts)
        self.during_fetch()
        return acquired


def test_a_burst_looks_again_when_a_step_was_drained_during_its_fetch(
    watched_broker: WatchedBroker,
) -> None:
    stopped: list[bool] = []
    nudged_fetches = [True]  # the first fetch meets a drained step, later ones nothing

    def during_fetch() -> None:
        if nudged_fetches and nudged_fetches.pop():
            prefetcher.nudge()

    broker = NudgedDuringTheFetch(watched_broker, during_fetch)
    prefetcher = idle_prefetcher(broker, burst=True, on_empty=lambda: stopped.append(True))
    prefetcher.stopping.wait = lambda timeout=None: True  # type: ignore[method-assign]
    try:
        prefetcher._round()  # the loop's body, run here: the thread is never started
        assert not stopped
        prefetcher._round()
        assert stopped == [True]
    finally:
        broker.client.close()


def test_a_burst_peeks_at_every_queue_before_it_stops(watched_broker: WatchedBroker) -> None:
    """A refill asks the queues that had tasks, and probes one it found empty only now and
    then: a task that arrived there (a workflow's next step) was left behind by the stop."""
    stopped: list[bool] = []
    buffer = TaskBuffer(8, lambda reservation: False)
    prefetcher = Prefetcher(
        watched_broker,
        "worker-a",
        ("default", "emails"),
        buffer,
        HeldLeases(),
        burst=True,
        is_settled=lambda: buffer.is_idle(),
        unwritten=lambda: 0,
        unwritten_chars=lambda: 0,
        on_empty=lambda: stopped.append(True),
        on_refused=lambda error: None,
        on_crash=lambda: None,
        limited=frozenset(),
        runners=lambda: Runners(threads=8, loop=0),
    )
    prefetcher.stopping.wait = lambda timeout=None: True  # type: ignore[method-assign]
    plan = prefetcher._plan
    plan.found("default", True)  # had tasks at the last refill
    plan.found("emails", False)  # found empty, and not to be probed again soon
    plan._next_probe = float("inf")
    echo.using(queue_name="emails").enqueue(1)
    prefetcher._round()  # asks "default" only, finds nothing: peeks, and looks again
    assert not stopped
    prefetcher._round()
    assert (stopped, buffer.waiting()) == ([], 1)


class ReadClock(HandClock[float]):
    """A hand clock that says when it was first read."""

    def __init__(self, now: float) -> None:
        super().__init__(now)
        self.read = threading.Event()

    def __call__(self) -> float:
        self.read.set()
        return super().__call__()


def test_a_burst_tail_looks_again_no_sooner_than_an_empty_queue_is_probed(
    watched_broker: WatchedBroker,
) -> None:
    """Results that land while others still run do not each send the prefetcher to every
    queue: at four threads each lone result did, three acquire calls apiece, in a burst's
    last tasks. It looks again once PROBE_EVERY_S passed, or at once when all settled."""
    clock = ReadClock(100.0)
    settled = [False]
    prefetcher = Prefetcher(
        watched_broker,
        "worker-a",
        ("default",),
        TaskBuffer(8, lambda reservation: False),
        HeldLeases(),
        burst=True,
        is_settled=lambda: settled[0],
        unwritten=lambda: 0,
        unwritten_chars=lambda: 0,
        on_empty=lambda: None,
        on_refused=lambda error: None,
        on_crash=lambda: None,
        limited=frozenset(),
        runners=lambda: Runners(threads=8, loop=0),
        clock=clock,
    )
    returned_at: list[float] = []
    waiting = threading.Thread(
        target=lambda: (prefetcher._wait_for_progress(), returned_at.append(clock.now))
    )
    waiting.start()
    assert clock.read.wait(10)  # it noted when it last looked
    for _ in range(10):
        prefetcher.nudge()  # results land; the clock has not moved
    clock.now += PROBE_EVERY_S
    deadline = time.monotonic() + 10
    while waiting.is_alive() and time.monotonic() < deadline:
        prefetcher.nudge()
        waiting.join(0.01)
    assert returned_at == [100.0 + PROBE_EVERY_S]  # not at a nudge before the time came

    settled[0] = True
    returned_at.clear()
    waiting = threading.Thread(
        target=lambda: (prefetcher._wait_for_progress(), returned_at.append(clock.now))
    )
    waiting.start()
    deadline = time.monotonic() + 10
    while waiting.is_alive() and time.monotonic() < deadline:
        prefetcher.nudge()  # the last result: everything settled, look at once
        waiting.join(0.01)
    assert returned_at == [100.0 + PROBE_EVERY_S]  # the clock did not move
