"""rate "20/s": no more than 20 tasks of the queue start in any second, across processes.

Starts are counted by their turns on Redis's clock, as the rate spaces them (start_turns.py):
the tasks' own stamps come a thread wake later, and bunched under load with the product right.
"""

import bisect
import signal
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.support import Command, wait_until
from tests.worker.tasks import square

from .start_turns import start_turns
from .tasks import hold_until, stamp

LIMITS = {"queue_limits": {"emails": {"rate": "20/s"}}}
INTERVAL_US = 50_000  # "20/s": one start every 50 ms
SECOND_US = 1_000_000
TASKS = 50
OTHERS = 200  # tasks of an unlimited queue served by the same workers meanwhile


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def most_in_any_second(turns_us: list[int]) -> int:
    """Return the most turns in any half-open window [t, t + 1 s)."""
    turns_us = sorted(turns_us)
    return max(bisect.bisect_left(turns_us, t + SECOND_US) - i for i, t in enumerate(turns_us))


def successful(result: TaskResult) -> Callable[[], bool]:
    return lambda: result.refresh() or result.status == TaskResultStatus.SUCCESSFUL


def stamps(log: Path) -> list[float]:
    """The tasks' own start stamps (wall clock, s), earliest first."""
    return sorted(float(line) for line in log.read_text().splitlines())


def no_start_before_its_turn(starts: list[float], turns_us: list[int]) -> bool:
    """Tell whether the n-th start came after the n-th turn: each task stamps after its own
    turn, on the same machine's clock, so it does unless a task started without a turn."""
    return all(start * SECOND_US > turn for start, turn in zip(starts, turns_us, strict=True))


def test_at_most_twenty_start_in_any_second(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_url: str,
) -> None:
    log = tmp_path / "starts.log"
    limited = backend.enqueue_many(stamp, [((str(log),), {}) for _ in range(TASKS)])
    others = backend.enqueue_many(square, [((n,), {}) for n in range(OTHERS)])
    with start_turns(redis_url, backend.broker, "emails", INTERVAL_US) as turns:
        worker = start_worker("--processes", "2", "--threads", "4", options=LIMITS)
        for result in [*limited, *others]:
            wait_until(successful(result), "every task run")
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log
    assert len(turns) == TASKS  # one turn per start
    assert most_in_any_second(turns) <= 20
    assert no_start_before_its_turn(stamps(log), turns)


def test_tasks_reserved_while_every_thread_is_busy_still_start_an_interval_apart(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_client: redis.Redis,
    redis_url: str,
) -> None:
    """A reservation waits in the buffer while every thread is busy; tasks reserved 50 ms
    apart once all started within a millisecond when one came free. A process reserves such
    tasks only for runners it has free, counting the threads its elastic pool may grow to:
    three here, while the pool stays at one (its --target-wait an hour)."""
    marker, release, log = tmp_path / "holding", tmp_path / "release", tmp_path / "starts.log"
    hold_until.enqueue(str(marker), str(release))
    stamped = backend.enqueue_many(stamp, [((str(log),), {}) for _ in range(4)])
    pool = ("--threads", "1", "--max-threads", "4", "--target-wait", "3600")
    with start_turns(redis_url, backend.broker, "emails", INTERVAL_US) as turns:
        worker = start_worker(*pool, options=LIMITS)
        wait_until(marker.exists, "the one thread is held")
        leases = backend.broker.queue_keys("emails").leases
        wait_until(lambda: redis_client.zcard(leases) >= 3, "rate-limited tasks reserved meanwhile")
        release.touch()
        for result in stamped:
            wait_until(successful(result), "run")
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log
    assert len(turns) == 4  # each started on a turn of its own: not together once one came free
    assert min(later - earlier for earlier, later in pairwise(turns)) >= INTERVAL_US
    assert no_start_before_its_turn(stamps(log), turns)


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
