"""An idle worker woken by a wake token asks the queue the token came from first: with more
queues than free slots, it asked them all again a few at a time, in turn, one round trip each,
until one held the task (docs/worker.md, Several queues)."""

from collections.abc import Iterator, Mapping, Sequence

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Acquired, Broker

from .support import WatchedBroker, echo_task, idle_prefetcher

QUEUES = tuple(f"q{n:02d}" for n in range(40))  # five times the buffer's 8 slots


class WakingBroker(WatchedBroker):
    """Records the queues each acquire asks; its idle waits block on Redis once ``blocking``."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.asked: list[list[str]] = []
        self.blocking = False

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        self.asked.append(list(counts))
        return super().acquire_from(counts)

    def wait_for_queues(
        self, queues: Sequence[str], worker_id: str, timeout_s: float
    ) -> frozenset[str] | None:
        if self.blocking:
            return Broker.wait_for_queues(self, queues, worker_id, timeout_s)
        return super().wait_for_queues(queues, worker_id, timeout_s)


@pytest.fixture
def waking_broker(backend: ThreadmillTaskBackend) -> Iterator[WakingBroker]:
    broker = WakingBroker(backend.broker)
    yield broker
    broker.client.close()


def test_the_refill_after_a_wake_takes_the_task_from_the_queue_the_token_came_from(
    waking_broker: WakingBroker,
) -> None:
    prefetcher = idle_prefetcher(waking_broker, QUEUES)
    for _ in range(len(QUEUES)):  # the first look asks every queue, 8 at a time
        prefetcher._round()
        if waking_broker.waits_s:
            break
    assert waking_broker.waits_s, "the prefetcher never found every queue empty"
    # The queue last in turn: neither the next refill nor the one after it asked it first.
    plan = prefetcher._plan
    queue = plan.queues[plan._first - 1]
    task = echo_task(queue)
    assert waking_broker.enqueue(queue, [task]).stored == 1
    waking_broker.blocking = True
    asked_before = len(waking_broker.asked)

    prefetcher._round()  # finds nothing in the queues first in turn, and is woken at once
    prefetcher._round()

    assert [r.lease.task_id for r in prefetcher.buffer.close()] == [task.id]
    assert waking_broker.asked[asked_before + 1] == [queue]
    assert len(waking_broker.asked) == asked_before + 2
