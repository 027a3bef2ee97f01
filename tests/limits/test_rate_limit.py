"""rate "20/s": no more than 20 tasks of the queue start in any second, across processes."""

import bisect
import signal
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker.tasks import square

from .tasks import hold_until, stamp

LIMITS = {"queue_limits": {"emails": {"rate": "20/s"}}}
TASKS = 50
OTHERS = 200  # tasks of an unlimited queue served by the same workers meanwhile


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def most_in_any_second(starts: list[float]) -> int:
    """Return the most start times in any half-open window [t, t + 1 s)."""
    starts = sorted(starts)
    return max(bisect.bisect_left(starts, t + 1.0) - i for i, t in enumerate(starts))


def test_at_most_twenty_start_in_any_second(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    limited = backend.enqueue_many(stamp, [((str(log),), {}) for _ in range(TASKS)])
    others = backend.enqueue_many(square, [((n,), {}) for n in range(OTHERS)])
    worker = start_worker("--processes", "2", "--threads", "4", options=LIMITS)

    def all_started() -> bool:
        return log.exists() and len(log.read_text().splitlines()) == TASKS

    wait_until(all_started, "every rate-limited task started")
    starts = [float(line) for line in log.read_text().splitlines()]
    assert most_in_any_second(starts) <= 20
    for result in [*limited, *others]:
        wait_until(lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL, "ack")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_tasks_reserved_while_every_thread_is_busy_still_start_an_interval_apart(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_client: redis.Redis,
) -> None:
    """A reservation waits in the buffer while every thread is busy; tasks reserved 50 ms
    apart once all started within a millisecond when one came free. A process reserves such
    tasks only for runners it has free, counting the threads its elastic pool may grow to:
    three here, while the pool stays at one (its --target-wait an hour)."""
    options = {"queue_limits": {"emails": {"rate": "20/s"}}}  # one start every 50 ms
    marker, release, log = tmp_path / "holding", tmp_path / "release", tmp_path / "starts.log"
    hold_until.enqueue(str(marker), str(release))
    stamps = backend.enqueue_many(stamp, [((str(log),), {}) for _ in range(4)])
    pool = ("--threads", "1", "--max-threads", "4", "--target-wait", "3600")
    worker = start_worker(*pool, options=options)
    wait_until(marker.exists, "the one thread is held")
    leases = backend.broker.queue_keys("emails").leases
    wait_until(lambda: redis_client.zcard(leases) >= 3, "rate-limited tasks reserved meanwhile")
    release.touch()
    for result in stamps:
        wait_until(lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL, "run")
    starts = sorted(float(line) for line in log.read_text().splitlines())
    # Turns are taken on the Redis clock and stamped on the worker's a moment later: one late
    # stamp shortens the gap after it, so each gap keeps half an interval of slack and the span
    # of three turns keeps that half interval once (the bug had them all within a millisecond).
    assert min(later - earlier for earlier, later in pairwise(starts)) >= 0.025
    assert starts[-1] - starts[0] >= 3 * 0.050 - 0.025
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_task_waiting_for_its_start_turn_is_handed_back_at_shutdown(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_client: redis.Redis,
) -> None:
    options = {"queue_limits": {"emails": {"rate": "1/m"}}}
    seconds, micros = redis_client.time()
    a_minute_on = seconds * 1000 + micros // 1000 + 60_000  # another start just took the turn
    redis_client.set(backend.broker.queue_keys("emails").paced, a_minute_on)
    log = tmp_path / "starts.log"
    waiting = stamp.enqueue(str(log))
    worker = start_worker("--threads", "1", options=options)
    leases = backend.broker.queue_keys("emails").leases
    wait_until(lambda: redis_client.zcard(leases) == 1, "the task reserved, waiting for its turn")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    waiting.refresh()
    assert waiting.status == TaskResultStatus.READY
    assert redis_client.zcard(leases) == 0
    assert not log.exists()
    assert "Released unstarted tasks count=1" in worker.log
