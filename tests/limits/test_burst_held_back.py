"""--burst beside a rate that holds ready tasks back: the queue is not empty, so the burst
waits for each start, however far off (docs/schedules.md, Per-queue limits). A full
concurrency limit: tests/limits/test_concurrency_limit.py."""

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until

from .tasks import timed

SLOW_RATE = {"queue_limits": {"reports": {"rate": "30/h"}}}  # a start every 120 s


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
