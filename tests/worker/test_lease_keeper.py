"""The lease keeper warns for a lease lost to another owner, never for one this process ended.

Each test runs the keeper's renewal by hand, with what would race it done between its snapshot
of the held leases and its Redis call: the order a worker meets when a task's outcome is written
while a renewal is on its way.
"""

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

import pytest
import redis

from django_threadmill.broker import (
    Broker,
    Finish,
    Lease,
    Outcome,
    ProgressReport,
    Rejected,
    Start,
)
from django_threadmill.codec.times import now_ms
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.leases import HeldLeases, LeaseKeeper
from django_threadmill.worker.progress import PendingProgress
from tests.worker import tasks

WORKER = "keeper-test:1:abcd"
ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'
WAIT_S = 10.0  # a deadline for what another thread does, never a pause


class Interleaved(Broker):
    """The real broker; ``meanwhile`` runs once, after the keeper's snapshot, before its renew."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.meanwhile: Callable[[], None] | None = None

    def renew(
        self,
        worker_id: str,
        leases: Sequence[Lease],
        served: Iterable[str] = (),
        *,
        threads: int = 0,
    ) -> list[str]:
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return super().renew(worker_id, leases, served, threads=threads)


class HeldAfterFinish(Broker):
    """The real broker; each finish call is recorded, then waits until ``go`` is set: the ack
    writer has written the outcome and not yet dropped the lease."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.recorded = threading.Event()
        self.go = threading.Event()

    def finish(
        self, worker_id: str, finishes: Sequence[Finish], progress: Sequence[ProgressReport] = ()
    ) -> list[Rejected[Finish]]:
        rejected = super().finish(worker_id, finishes, progress)
        self.recorded.set()
        assert self.go.wait(WAIT_S), "the test never let the finish call return"
        return rejected


@pytest.fixture
def held() -> HeldLeases:
    return HeldLeases()


@pytest.fixture
def interleaved(broker: Broker) -> Iterator[Interleaved]:
    interleaved = Interleaved(broker)
    yield interleaved
    interleaved.client.close()  # a broker of its own: its pool is its own too


@pytest.fixture
def keeper(interleaved: Interleaved, held: HeldLeases) -> LeaseKeeper:
    """A keeper whose renewals the test calls itself (its thread is never started)."""
    return LeaseKeeper(interleaved, WORKER, ("default",), held, 60.0, on_crash=pytest.fail)


@pytest.fixture
def held_after_finish(broker: Broker) -> Iterator[HeldAfterFinish]:
    paused = HeldAfterFinish(broker)
    yield paused
    paused.go.set()
    paused.client.close()


@pytest.fixture
def writer(held_after_finish: HeldAfterFinish, held: HeldLeases) -> Iterator[AckWriter]:
    crashes: list[str] = []
    writer = AckWriter(
        held_after_finish,
        WORKER,
        held,
        PendingProgress(),
        lambda: None,
        lambda: crashes.append("x"),
    )
    writer.start()
    yield writer
    held_after_finish.go.set()
    writer.stop()
    writer.join(WAIT_S)
    assert not crashes


def run(broker: Broker, held: HeldLeases, count: int = 1) -> list[Lease]:
    """Enqueue, reserve and start ``count`` tasks; the process holds their leases."""
    for n in range(count):
        tasks.square.enqueue(n)
    leases = [r.lease for r in broker.acquire("default", count).reservations]
    held.add(leases)
    assert broker.start(WORKER, [Start(lease=lease, started_ms=now_ms()) for lease in leases]) == []
    return leases


def retry(lease: Lease) -> Finish:
    """The outcome of an attempt whose task failed and whose retry policy runs it again now."""
    return Finish(lease=lease, outcome=Outcome.RETRY, value=ERROR, started_ms=1, finished_ms=2)


def lease_lost_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Lease lost")]


def test_a_retry_written_during_a_renewal_is_not_a_lost_lease(
    broker: Broker,
    interleaved: Interleaved,
    keeper: LeaseKeeper,
    held: HeldLeases,
    held_after_finish: HeldAfterFinish,
    writer: AckWriter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ack writer records the retry after the keeper's snapshot, and drops the lease only
    after the renewal came back: the renewal meets the task ready again, with no lease."""
    caplog.set_level(logging.INFO, "django_threadmill")
    [lease] = run(broker, held)

    def write_the_retry() -> None:
        writer.submit_finish(retry(lease))
        assert held_after_finish.recorded.wait(WAIT_S), "the retry was never written"

    interleaved.meanwhile = write_the_retry
    keeper.renew()
    assert lease_lost_lines(caplog) == []
    record = broker.record(lease.task_id)
    assert record is not None
    assert record["state"] == "ready"


def test_a_retry_reserved_again_during_a_renewal_is_not_a_lost_lease(
    broker: Broker,
    interleaved: Interleaved,
    keeper: LeaseKeeper,
    held: HeldLeases,
    held_after_finish: HeldAfterFinish,
    writer: AckWriter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A retry due at once can be reserved again (here, or by another worker) before the
    renewal runs: the record then carries another token, and the renewal reports the old
    lease lost. This process ended that lease itself, so that is no news either."""
    caplog.set_level(logging.INFO, "django_threadmill")
    [lease] = run(broker, held)

    def write_the_retry_and_reserve_it_again() -> None:
        writer.submit_finish(retry(lease))
        assert held_after_finish.recorded.wait(WAIT_S), "the retry was never written"
        [again] = broker.acquire("default", 1).reservations
        assert again.lease.task_id == lease.task_id
        assert again.lease.token != lease.token

    interleaved.meanwhile = write_the_retry_and_reserve_it_again
    keeper.renew()
    assert lease_lost_lines(caplog) == []


def test_a_lease_reaped_and_reserved_again_is_still_reported_lost(
    broker: Broker,
    interleaved: Interleaved,
    keeper: LeaseKeeper,
    held: HeldLeases,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lease the reaper took while this process held it, now held by another reservation,
    is news: the keeper warns and forgets it, so a worker thread will not run that task."""
    caplog.set_level(logging.INFO, "django_threadmill")
    [lost, kept] = run(broker, held, count=2)

    def reap_and_reserve_again() -> None:
        keys = broker.queue_keys("default")
        redis_client.zadd(keys.leases, {lost.task_id: 1}, xx=True)  # its lease lapsed
        [expired] = broker.reap("default", 10).expired
        assert broker.finish("", [retry(expired.lease)]) == []  # the reaper settles: a retry
        redis_client.zadd(keys.delayed, {lost.task_id: 1}, xx=True)  # due now
        [again] = broker.acquire("default", 1).reservations
        assert again.lease.task_id == lost.task_id

    interleaved.meanwhile = reap_and_reserve_again
    keeper.renew()
    assert lease_lost_lines(caplog) == [
        f"Lease lost task_id={lost.task_id} (reaped or settled elsewhere)"
    ]
    assert not held.holds(lost)
    assert held.holds(kept)
