"""An idle prefetcher waits for what is due soon (a delayed task, a rate token) in Redis for all
but the last tick, which it waits out itself: a BLPOP's timeout ends only at the Redis server's
next cron tick, up to 100 ms late, and a rate of 50/s started about 10 tasks a second."""

from datetime import timedelta

import pytest
from django.utils import timezone

from django_threadmill.broker.wake import BLPOP_LATE_S
from testproject.example.tasks import add

from .support import WatchedBroker, idle_prefetcher


def test_a_task_due_within_a_tick_is_waited_for_here_not_in_redis(
    watched_broker: WatchedBroker,
) -> None:
    for _attempt in range(20):  # a loaded machine may reach the first round after it is due
        add.using(run_after=timezone.now() + timedelta(milliseconds=50)).enqueue(1, 2)
        prefetcher = idle_prefetcher(watched_broker)
        prefetcher._round()  # nothing due yet: it waits for the task here
        if prefetcher.buffer.waiting() == 0:
            break
    else:
        pytest.fail("every first round came after its task was due")
    assert watched_broker.waits_s == []
    prefetcher._round()  # due now

    assert prefetcher.buffer.waiting() == 1
    assert watched_broker.waits_s == []


def test_a_later_task_is_waited_for_in_redis_but_for_the_last_tick(
    watched_broker: WatchedBroker,
) -> None:
    for _attempt in range(20):  # a loaded machine may reach the first round within a tick of due
        watched_broker.acquired.clear()
        watched_broker.waits_s.clear()
        add.using(run_after=timezone.now() + timedelta(seconds=0.4)).enqueue(1, 2)
        prefetcher = idle_prefetcher(watched_broker)
        prefetcher._round()  # the recorded BLPOP returns at once; the rest is waited here
        [acquired] = watched_broker.acquired
        if acquired.next_due_ms is not None and acquired.next_due_ms / 1000 > BLPOP_LATE_S:
            break
        prefetcher._round()  # takes that task, due by now, out of the next attempt's way
    else:
        pytest.fail("every first round came within a tick of its task being due")
    assert watched_broker.waits_s == [acquired.next_due_ms / 1000 - BLPOP_LATE_S]
    prefetcher._round()

    assert prefetcher.buffer.waiting() == 1
