"""--burst stops only on a look at every queue that nothing landed during: a workflow's next
step once waited for a process that had stopped (a workflow left unfinished)."""

from collections.abc import Callable, Mapping

from django_threadmill.broker import Acquired
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.prefetcher import Prefetcher
from testproject.example.tasks import echo

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
        on_empty=lambda: stopped.append(True),
        on_refused=lambda: None,
        on_crash=lambda: None,
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
