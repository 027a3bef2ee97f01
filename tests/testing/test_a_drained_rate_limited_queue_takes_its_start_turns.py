"""A drain takes a rate-limited queue's start turn before each of its tasks starts, as a worker
does (pace.lua): the acquire script spaces reservations, not starts.

The drain started each task it reserved at once. A task of another queue run before it in the
same round held its start back, so the queue's next task, reserved its interval after it and run
in the next round, started right behind it: two starts of a 10/s queue a few ms apart.
"""

import itertools

from django.test import override_settings

from django_threadmill.testing import Threadmill
from tests.conftest import tasks_setting

from . import tasks

INTERVAL_S = 0.1  # "600/m"


def test_a_start_held_back_by_another_queues_task_does_not_bring_the_next_one_closer(
    threadmill: Threadmill, redis_url: str, key_prefix: str
) -> None:
    limits = {"reports": {"rate": "600/m"}}  # one start every 100 ms
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, queue_limits=limits)):
        tasks.take.enqueue(3 * INTERVAL_S, "default")  # runs first in the round, a while
        for n in range(3):
            tasks.record_report.enqueue(f"report {n}")
        assert threadmill.drain(queues=["default", "reports"]) == 4
    starts = [at for label, at in tasks.runs if label.startswith("report")]
    assert len(starts) == 3
    # Turns are on the Redis clock and stamped here a moment later: one late stamp shortens the
    # gap after it, so each gap keeps half an interval of slack.
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert all(gap >= INTERVAL_S / 2 for gap in gaps), gaps
