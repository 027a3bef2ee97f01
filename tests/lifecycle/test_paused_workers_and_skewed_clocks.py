"""Two clocks and lease edge cases, met with real worker processes: a worker paused past its
lease and resumed, a worker whose wall clock is hours off Redis's, renewals through a Redis
blip (docs/design.md, One clock; docs/lifecycle.md, When a worker dies: leases and the reaper)."""

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable, LeaseExpired
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task
from django_threadmill.worker.leases import HeldLeases, LeaseKeeper
from django_threadmill.worker.reaper import reap_once
from tests.support import ROOT, Command, wait_until

from .support import wait_for_expiry

NO_WAIT = ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)


def _run_until(gate: str, marker: str) -> str:
    """Append a line to ``marker`` as each attempt starts, then wait for ``gate`` to exist."""
    with Path(marker).open("a") as lines:
        lines.write("started\n")
    deadline = time.monotonic() + 60
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # this task stands for long work; the test opens the gate
    return "done"


@task
def gated(gate: str, marker: str) -> str:
    """Run until ``gate`` exists; carry no policy, so a lost attempt fails."""
    return _run_until(gate, marker)


@task(retry=NO_WAIT)
def gated_retried(gate: str, marker: str) -> str:
    """Run until ``gate`` exists; a lost attempt is retried at once."""
    return _run_until(gate, marker)


def starts(marker: Path) -> int:
    return marker.read_text().count("started") if marker.exists() else 0


def state_of(pid: int) -> str:
    """Return the state letter /proc gives a process (R, S, T, Z, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """Stop ``pid`` (SIGSTOP) for the block, then let it go on (SIGCONT)."""
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: state_of(pid) == "T", "the worker process stopping")
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def record_field(broker: Broker, redis_client: redis.Redis, task_id: str, name: str) -> str | None:
    key = broker.record_key(task_id)
    assert key is not None
    return redis_client.hget(key, name)


@pytest.mark.parametrize(
    ("chosen", "status", "runs"),
    [(gated, TaskResultStatus.FAILED, 1), (gated_retried, TaskResultStatus.SUCCESSFUL, 2)],
    ids=["fail", "retry"],
)
def test_a_worker_paused_past_its_lease_is_fenced_when_it_finishes_late(
    chosen: object,
    status: TaskResultStatus,
    runs: int,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    gate, marker = tmp_path / "gate", tmp_path / "starts"
    task_id = chosen.enqueue(str(gate), str(marker)).id  # type: ignore[attr-defined]
    worker = start_worker("--threads", "1", "--reap-interval", "0", lease_ttl_s=1.0)
    wait_until(lambda: starts(marker) == 1, "the first attempt starting")
    wait_until(
        lambda: record_field(broker, redis_client, task_id, "state") == "running",
        "the start notice written",
    )
    [pid] = worker.child_pids()
    with paused(pid):
        wait_for_expiry(broker, redis_client)
        report = reap_once(backend)  # another host's reaper, while the worker is stopped
        assert report.failed + report.retried == 1, report
        gate.touch()
    worker.wait_for_log(rf"Ack not recorded kind=finish task_id={task_id}: settled or held")
    wait_until(lambda: backend.get_result(task_id).status == status, f"the task {status}")
    worker.signal()
    assert worker.wait(60) == 0, worker.log

    result = backend.get_result(task_id)
    assert [error.exception_class for error in result.errors] == [LeaseExpired]
    assert starts(marker) == runs
    assert result.attempts == runs
    if status is TaskResultStatus.SUCCESSFUL:  # the retry's own outcome, not the late one's
        assert result.worker_ids == [result.worker_ids[0]] * 2
    else:  # the late return value was not written beside the failure
        assert record_field(broker, redis_client, task_id, "result") is None


def test_a_reservation_lost_while_paused_does_not_run_beside_its_own_reacquired_copy(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    """The process's prefetcher may take the released task again while the old reservation
    still waits in its buffer: the old one is lost all the same, and must not run."""
    gate, open_gate, long_marker, marker = (tmp_path / name for name in ("g", "o", "l", "m"))
    open_gate.touch()
    long_id = gated.enqueue(str(gate), str(long_marker)).id
    task_id = gated.enqueue(str(open_gate), str(marker)).id
    worker = start_worker(
        "--threads", "1", "--prefetch", "2", "--reap-interval", "0", lease_ttl_s=1.0
    )  # fmt: skip
    wait_until(
        lambda: record_field(broker, redis_client, long_id, "state") == "running",
        "the long task running",
    )
    wait_until(
        lambda: record_field(broker, redis_client, task_id, "state") == "reserved",
        "the second task reserved behind it",
    )
    old_token = record_field(broker, redis_client, task_id, "token")
    [pid] = worker.child_pids()
    with paused(pid):
        wait_for_expiry(broker, redis_client)
        report = reap_once(backend)
        assert (report.failed, report.released) == (1, 1), report

    def reserved_again() -> bool:
        token = record_field(broker, redis_client, task_id, "token")
        state = record_field(broker, redis_client, task_id, "state")
        return state == "reserved" and token not in (old_token, "")

    wait_until(reserved_again, "the released task reserved again by the same process")
    worker.wait_for_log(rf"Lease lost task_id={long_id}")  # the lease keeper ran since
    gate.touch()
    wait_until(
        lambda: backend.get_result(task_id).status == TaskResultStatus.SUCCESSFUL,
        "the second task SUCCESSFUL",
    )
    worker.signal()
    assert worker.wait(60) == 0, worker.log

    assert starts(marker) == 1, worker.log
    assert f"Skipped task whose reservation was lost task_id={task_id}" in worker.log


class Blip(Broker):
    """The real broker, whose renewals fail (Redis unreachable) until ``back`` is set."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.back = False
        self.failed = 0
        self.renewed = 0

    def renew(
        self,
        worker_id: str,
        leases: Sequence[Lease],
        served: Iterable[str] = (),
        *,
        threads: int = 0,
    ) -> list[str]:
        if not self.back:
            self.failed += 1
            raise BrokerUnavailable("Redis at redis://blip is unreachable (a test blip)")
        lost = super().renew(worker_id, leases, served, threads=threads)
        self.renewed += 1
        return lost


def test_a_renewal_that_failed_is_tried_again_soon_not_an_interval_later(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """An outage that began just before a renewal would otherwise leave the lease only one
    interval (a third of lease_ttl) to ride it out: the next try came a whole interval later,
    when the one after it is already past the deadline."""
    gated.enqueue("gate", "marker")
    [reservation] = broker.acquire("default", 1).reservations
    lease = reservation.lease
    assert broker.start("w", [Start(lease=lease, started_ms=now_ms())]) == []
    held = HeldLeases()
    held.add([lease])
    blip = Blip(broker)
    crashes: list[str] = []
    keeper = LeaseKeeper(blip, "w", ("default",), held, 3600.0, lambda: crashes.append("x"))
    keeper.start()
    try:
        wait_until(lambda: blip.failed >= 1, "the first renewal failing")
        blip.back = True  # the blip ends long before the next interval
        wait_until(lambda: blip.renewed >= 1, "a renewal once Redis is back")
    finally:
        keeper.stop()
        keeper.join(10)
        blip.client.close()
    assert not crashes
    assert held.holds(lease)


def skewed_env(directory: Path, skew_s: float) -> dict[str, str]:
    """Return the environment of a process whose wall clock is ``skew_s`` seconds off."""
    shutil.copy(ROOT / "tests" / "schedules" / "skewed_clock.py", directory / "sitecustomize.py")
    return {"PYTHONPATH": str(directory), "THREADMILL_TEST_CLOCK_SKEW_S": str(skew_s)}


def redis_now_ms(redis_client: redis.Redis) -> float:
    seconds, micros = redis_client.time()
    return seconds * 1000 + micros / 1000


@pytest.mark.parametrize("skew_s", [3600, -3600], ids=["hour-ahead", "hour-behind"])
def test_a_worker_whose_clock_is_an_hour_off_keeps_its_lease_and_dates_the_run_on_its_clock(
    skew_s: int,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    gate, marker = tmp_path / "gate", tmp_path / "starts"
    task_id = gated.enqueue(str(gate), str(marker)).id
    worker = start_worker(
        "--threads", "1", "--reap-interval", "0", lease_ttl_s=1.0,
        extra_env=skewed_env(tmp_path, skew_s),
    )  # fmt: skip
    wait_until(
        lambda: record_field(broker, redis_client, task_id, "state") == "running",
        "the attempt running",
    )
    leases = broker.queue_keys("default").leases
    first_deadline = redis_client.zscore(leases, task_id)
    assert first_deadline is not None
    # Two lease lengths later by the Redis clock, only renewals can have kept it.
    wait_until(lambda: redis_now_ms(redis_client) > first_deadline + 1000, "two lease lengths")
    assert reap_once(backend).failed == 0
    gate.touch()
    wait_until(
        lambda: backend.get_result(task_id).status == TaskResultStatus.SUCCESSFUL,
        "the task SUCCESSFUL",
    )
    worker.signal()
    assert worker.wait(60) == 0, worker.log

    result = backend.get_result(task_id)
    assert starts(marker) == 1
    assert result.enqueued_at is not None
    assert result.started_at is not None
    assert result.finished_at is not None
    # enqueued_at is on the Redis clock; started_at and finished_at on the worker's.
    offset_s = (result.started_at - result.enqueued_at).total_seconds()
    assert abs(offset_s - skew_s) < 60, (result.enqueued_at, result.started_at)
    assert result.started_at <= result.finished_at
