"""A worker of many queues learns which hold tasks in a few round trips: a refill peeks at the
queues it has no slot for, and a burst's last look tells the next refill which queue holds the
tasks it found (docs/worker.md, Many queues).

Before, a refill asked only as many queues as it had free slots, and probed every queue found
empty meanwhile: a ``--burst`` worker of 2,000 empty queues at one thread sent half a million
calls over 53 s before it ended, and a burst's last look that found tasks sent the next
refills through the queues a few at a time again."""

import math
from collections.abc import Iterator, Mapping

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Acquired, Broker, NewTask
from django_threadmill.worker.fetch_plan import PEEKS_PER_REFILL
from django_threadmill.worker.prefetcher import Prefetcher

from .support import WatchedBroker, echo_task, idle_prefetcher

QUEUES = tuple(f"q{n:04d}" for n in range(1_000))
SLOTS = 8  # idle_prefetcher's buffer
LATE_QUEUE = QUEUES[-1]  # last in turn: the refills after a forgetful look reach it last


class LateTaskBroker(WatchedBroker):
    """Records each acquire's counts; enqueues a task in LATE_QUEUE just before the first look
    that peeks at every queue (a burst's last look), once ``late_task`` is set."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.asked: list[dict[str, int]] = []
        self.late_task: NewTask | None = None

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        self.asked.append(dict(counts))
        if self.late_task is not None and len(counts) == len(QUEUES):
            assert self.enqueue(LATE_QUEUE, [self.late_task]).stored == 1
            self.late_task = None
        return super().acquire_from(counts)


@pytest.fixture
def watched(backend: ThreadmillTaskBackend) -> Iterator[LateTaskBroker]:
    broker = LateTaskBroker(backend.broker)
    yield broker
    broker.client.close()


def burst_prefetcher(broker: Broker) -> Prefetcher:
    """A --burst prefetcher of QUEUES whose end (``on_empty``) stops it."""
    prefetcher = idle_prefetcher(
        broker, QUEUES, burst=True, on_empty=lambda: prefetcher.stopping.set()
    )
    return prefetcher


def run_till_stopped(prefetcher: Prefetcher, most: int) -> None:
    """Run the prefetcher's rounds until it stops; fail past ``most`` of them."""
    for _ in range(most):
        if prefetcher.stopping.is_set():
            return
        prefetcher._round()
    assert prefetcher.stopping.is_set(), f"still going after {most} rounds"


def test_a_burst_over_many_empty_queues_ends_after_a_refill_per_peek_bound(
    watched: LateTaskBroker,
) -> None:
    prefetcher = burst_prefetcher(watched)

    run_till_stopped(prefetcher, most=len(QUEUES))

    # A refill per SLOTS + PEEKS_PER_REFILL queues, the one that finds them all empty, and
    # the last look at every queue; before, a refill per SLOTS queues: 125 and more.
    assert watched.acquires <= math.ceil(len(QUEUES) / (SLOTS + PEEKS_PER_REFILL)) + 2
    learning = watched.asked[:-1]
    assert all(len(counts) <= SLOTS + 2 * PEEKS_PER_REFILL for counts in learning)
    assert watched.asked[-1] == dict.fromkeys(QUEUES, 0)


def test_the_refill_after_a_bursts_last_look_asks_the_queue_that_look_found_tasks_in(
    watched: LateTaskBroker,
) -> None:
    watched.late_task = task = echo_task(LATE_QUEUE)
    prefetcher = burst_prefetcher(watched)
    while watched.late_task is not None:  # till the last look, which found the task
        prefetcher._round()
    asked_before = len(watched.asked)

    prefetcher._round()

    # The slots a probe of the queues found empty does not take; before, 8 other queues'
    assert watched.asked[asked_before].get(LATE_QUEUE, 0) >= 1
    assert [r.lease.task_id for r in prefetcher.buffer.close()] == [task.id]
