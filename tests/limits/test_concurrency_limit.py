"""concurrency: 2 holds across worker processes, and a killed holder's slot comes back."""

import os
import signal
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once
from tests.support import Command, wait_until

from .tasks import hold_until, timed

LIMITS = {"queue_limits": {"reports": {"concurrency": 2}}}
LEASE_EXPIRED = "django_threadmill.exceptions.LeaseExpired"
TASKS = 12


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """Return the most intervals open at one moment (an end before a start at equal times)."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    return peak


def test_no_more_than_two_run_at_once_across_three_processes(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    results = backend.enqueue_many(timed, [((str(log), 0.3), {}) for _ in range(TASKS)])
    worker = start_worker("--processes", "3", "--threads", "4", options=LIMITS)

    def all_done() -> bool:
        return log.exists() and len(log.read_text().splitlines()) == TASKS

    wait_until(all_done, "every reports task finished", 60)
    intervals = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    assert most_at_once(intervals) == 2  # both slots used, never a third
    for result in results:
        wait_until(lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL, "ack")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_a_killed_holders_slots_come_back_once_its_leases_are_reaped(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    markers, release = [tmp_path / "a", tmp_path / "b"], tmp_path / "release"
    held = [hold_until.enqueue(str(marker), str(release)) for marker in markers]
    args = ("--queue", "reports", "--threads", "4", "--reap-interval", "0")
    worker = start_worker(*args, lease_ttl_s=2, options=LIMITS)
    wait_until(lambda: all(m.exists() for m in markers), "both slots taken")
    # Their start notices written (the ack writer holds one back 20 ms): the kill then leaves
    # running attempts, which the reap fails, as they have no retry policy. Before, it could
    # leave them reserved, put back in front by the reap.
    wait_until(
        lambda: all(backend.get_result(r.id).status == TaskResultStatus.RUNNING for r in held),
        "both tasks recorded running",
    )
    waiting = timed.enqueue(str(tmp_path / "after.log"), 0)
    [pid] = worker.child_pids()
    os.kill(pid, signal.SIGKILL)
    leases = backend.broker.queue_keys("reports").leases

    def leases_expired() -> bool:
        seconds, micros = redis_client.time()
        now_ms = seconds * 1000 + micros // 1000
        deadlines = [score for _, score in redis_client.zrange(leases, 0, -1, withscores=True)]
        return len(deadlines) == 2 and max(deadlines) < now_ms

    wait_until(leases_expired, "the killed process's leases expire", 15)
    wait_until(lambda: len(worker.child_pids()) == 2, "the process restarted")
    # The dead process still holds both slots until its leases are settled: nothing may run.
    assert backend.get_result(waiting.id).status == TaskResultStatus.READY
    reap_once(backend)  # the slots come back
    wait_until(lambda: waiting.refresh() or waiting.status == TaskResultStatus.SUCCESSFUL, "run")
    for result in held:
        result.refresh()
        assert [error.exception_class_path for error in result.errors] == [LEASE_EXPIRED]
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


@pytest.mark.parametrize("far_delayed", [False, True], ids=["alone", "beside-a-far-delayed-task"])
def test_a_burst_waits_for_the_slots_another_process_holds(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    far_delayed: bool,
) -> None:
    """A queue at its concurrency limit is not empty: a burst run beside the holder waits for a
    slot, runs the queue's tasks, and only then exits; a task of the queue delayed by hours
    does not make it wait for that task instead (it once exited 0 leaving them ready)."""
    markers, release = [tmp_path / "a", tmp_path / "b"], tmp_path / "release"
    held = [hold_until.enqueue(str(marker), str(release)) for marker in markers]
    holder = start_worker("--queue", "reports", "--threads", "2", options=LIMITS)
    wait_until(lambda: all(m.exists() for m in markers), "both slots taken")
    if far_delayed:
        later = timezone.now() + timedelta(hours=2)
        timed.using(run_after=later).enqueue(str(tmp_path / "later.log"), 0)
    waiting = timed.enqueue(str(tmp_path / "after.log"), 0)
    burst = start_worker("--processes", "0", "--burst", "--queue", "reports", options=LIMITS)
    burst.wait_for_log(r"Burst waits for a slot .* queues=reports")
    assert burst.process.poll() is None, burst.log
    release.touch()
    assert burst.wait() == 0, burst.log
    for result in [*held, waiting]:  # the burst, or the holder it waited beside, ran them
        done = lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL  # noqa: E731
        wait_until(done, "every task run")
    holder.signal(signal.SIGTERM)
    assert holder.wait() == 0, holder.log
