"""--burst beside a limit that holds ready tasks back: the queue is not empty, so the burst
waits (docs/schedules.md, Per-queue limits). It once exited 0 at once, leaving them ready,
when the rate's next start or the queue's next delayed task was over 60 s off."""

import signal
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until

from .tasks import hold_until, timed

SLOW_RATE = {"queue_limits": {"reports": {"rate": "30/h"}}}  # a start every 120 s
TWO_SLOTS = {"queue_limits": {"reports": {"concurrency": 2}}}


def succeeded(result: object) -> Callable[[], bool]:
    return lambda: result.refresh() or result.status == TaskResultStatus.SUCCESSFUL  # type: ignore[attr-defined]


@pytest.mark.parametrize("tasks_options", [SLOW_RATE])
def test_a_burst_waits_for_a_rate_limited_queues_next_start_however_far(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    results = [timed.enqueue(str(tmp_path / "runs.log"), 0) for _ in range(2)]
    burst = start_worker("--processes", "0", "--burst", "--queue", "reports", options=SLOW_RATE)
    burst.wait_for_log(r"Burst waits for the next start of a rate-limited queue queues=reports")
    wait_until(succeeded(results[0]), "the first task ran")
    assert burst.process.poll() is None, burst.log  # the second is still ready: no exit

    keys = backend.broker.queue_keys("reports")  # the next start comes now, not in 120 s
    redis_client.delete(keys.rate, keys.paced)
    redis_client.rpush(keys.wake, 1)
    assert burst.wait() == 0, burst.log
    wait_until(succeeded(results[1]), "the second task ran")


@pytest.mark.parametrize("tasks_options", [TWO_SLOTS])
def test_a_burst_waits_for_a_slot_when_the_queue_also_holds_a_far_delayed_task(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    markers, release = [tmp_path / "a", tmp_path / "b"], tmp_path / "release"
    held = [hold_until.enqueue(str(marker), str(release)) for marker in markers]
    holder = start_worker("--queue", "reports", "--threads", "2", options=TWO_SLOTS)
    wait_until(lambda: all(m.exists() for m in markers), "both slots taken")
    later = timezone.now() + timedelta(hours=2)
    timed.using(run_after=later).enqueue(str(tmp_path / "later.log"), 0)
    waiting = timed.enqueue(str(tmp_path / "after.log"), 0)
    burst = start_worker("--processes", "0", "--burst", "--queue", "reports", options=TWO_SLOTS)
    burst.wait_for_log(r"Burst waits for a slot .* queues=reports")
    assert burst.process.poll() is None, burst.log
    release.touch()
    assert burst.wait() == 0, burst.log
    for result in [*held, waiting]:
        wait_until(succeeded(result), "every ready task run")
    holder.signal(signal.SIGTERM)
    assert holder.wait() == 0, holder.log
