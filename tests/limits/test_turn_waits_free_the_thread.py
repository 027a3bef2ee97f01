"""A task of a rate-limited queue whose start turn is far off does not hold a worker thread
while it waits: other queues' tasks run meanwhile, a stop hands it back unstarted, and --burst
waits for it (docs/schedules.md, Per-queue limits). Real worker command, real Redis."""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, run_to_completion, wait_until
from tests.worker.tasks import square

from .tasks import stamp

OPTIONS = {"queue_limits": {"emails": {"rate": "1/h"}}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return OPTIONS


def next_start_in(backend: ThreadmillTaskBackend, redis_client: redis.Redis, ms: int) -> None:
    """Say another worker just started a task of "emails": its next start comes in ``ms``.

    Reservations and starts each have their bucket: a task reserved long before it started (it
    waited in a busy worker's buffer) puts the next task's turn this far past its reservation.
    """
    seconds, micros = redis_client.time()
    paced = backend.broker.queue_keys("emails").paced
    redis_client.set(paced, seconds * 1000 + micros // 1000 + ms)


def test_other_queues_run_while_a_task_waits_for_a_far_turn(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_client: redis.Redis,
) -> None:
    """With one thread, a turn an hour off held that thread for the hour: a task of an
    unlimited queue reserved meanwhile waited behind it."""
    next_start_in(backend, redis_client, 3_600_000)
    log = tmp_path / "starts.log"
    paced = stamp.enqueue(str(log))
    worker = start_worker("--threads", "1", options=OPTIONS)
    leases = backend.broker.queue_keys("emails").leases
    wait_until(lambda: redis_client.zcard(leases) == 1, "the task reserved, its turn far off")
    other = square.enqueue(7)
    wait_until(lambda: other.refresh() or other.status == TaskResultStatus.SUCCESSFUL, "ran")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    paced.refresh()
    assert paced.status == TaskResultStatus.READY  # handed back, in its place, not run
    assert redis_client.zcard(leases) == 0
    assert not log.exists()
    assert "Released unstarted tasks count=1" in worker.log


def test_a_burst_waits_for_a_task_waiting_for_its_turn(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    redis_client: redis.Redis,
) -> None:
    """The task waiting for its turn is neither in the buffer nor running: the burst must not
    take the queues for drained and exit, handing it back unrun. Its turn comes after the
    prefetcher's longest wait for results (5 s), so the prefetcher looks again meanwhile."""
    next_start_in(backend, redis_client, 6_000)
    log = tmp_path / "starts.log"
    paced = stamp.enqueue(str(log))
    burst = start_worker("--processes", "0", "--burst", "--queue", "emails", options=OPTIONS)
    run_to_completion(burst)
    paced.refresh()
    assert paced.status == TaskResultStatus.SUCCESSFUL
    assert log.exists()
