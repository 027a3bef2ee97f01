"""A worker whose host was suspended (a laptop's lid, a paused or migrated VM) judges its leases
on a clock the suspend did not stop (docs/worker.md, Leases).

Linux's CLOCK_MONOTONIC, which ``time.monotonic`` and every sleep run on, stands still in a
suspend; CLOCK_BOOTTIME and the Redis clock, which lease deadlines are on, run on. A suspend is
modelled here: CLOCK_BOOTTIME is moved on as the kernel moves it at resume, and the lease
deadlines set back by as much, as the Redis clock running on leaves them. The worker's parts run
in the test's thread (the lease keeper in its own), on real Redis.
"""

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.buffer import Runners, TaskBuffer
from django_threadmill.worker.cancelled_steps import CancelledSteps
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.leases import HeldLeases, LeaseKeeper
from django_threadmill.worker.pacing import Pacer
from django_threadmill.worker.prefetcher import Prefetcher
from django_threadmill.worker.reaper import reap_once
from django_threadmill.worker.runner import RunnerParts
from django_threadmill.worker.threads import WorkerThread
from tests.support import wait_until
from tests.worker import tasks

LEASE_TTL_S = 3600  # long: only the modelled suspend, never the test's own run, lapses a lease
SLEPT_BEFORE_S = 86_400.0  # the host slept a day before the worker started


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": LEASE_TTL_S}


class SuspendableHost:
    """``time.clock_gettime`` of a host that can be suspended: CLOCK_BOOTTIME runs
    ``suspended_s`` ahead of the real one, every other clock (CLOCK_MONOTONIC too) is as is."""

    def __init__(self, real: Callable[[int], float]) -> None:
        self.real = real
        self.suspended_s = SLEPT_BEFORE_S  # BOOTTIME is ahead of MONOTONIC by every suspend

    def clock_gettime(self, clock_id: int) -> float:
        now = self.real(clock_id)
        return now + self.suspended_s if clock_id == time.CLOCK_BOOTTIME else now

    def suspend(self, seconds: float) -> None:
        """Suspend the host for ``seconds`` and resume it, as far as its clocks tell."""
        self.suspended_s += seconds


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> SuspendableHost:
    if not hasattr(time, "CLOCK_BOOTTIME"):
        pytest.skip("CLOCK_BOOTTIME is Linux's")
    suspendable = SuspendableHost(time.clock_gettime)
    monkeypatch.setattr(time, "clock_gettime", suspendable.clock_gettime)
    return suspendable


def redis_clock_runs_on(
    broker: Broker, redis_client: redis.Redis, task_id: str, seconds: float
) -> float:
    """Set ``task_id``'s lease deadline back by ``seconds``, as the Redis clock running on
    through a suspend leaves it; return the new deadline (ms)."""
    leases = broker.queue_keys("default").leases
    deadline = redis_client.zscore(leases, task_id)
    assert deadline is not None
    moved = deadline - seconds * 1000
    redis_client.zadd(leases, {task_id: moved}, xx=True)
    return moved


def _fail() -> None:
    raise AssertionError("a worker part crashed")


class Process:
    """One worker process's parts around the test's Redis, none of their threads started."""

    def __init__(self, backend: ThreadmillTaskBackend) -> None:
        broker = backend.broker
        self.held = HeldLeases(broker.settings.lease_ttl_s)
        executor = Executor("worker-a", backend.alias, type(backend))
        self.buffer = TaskBuffer(capacity=4, is_async=lambda reservation: False)
        self.prefetcher = Prefetcher(
            broker, "worker-a", ("default",), self.buffer, self.held,
            burst=False, is_settled=lambda: True, unwritten=lambda: 0,
            unwritten_chars=lambda: 0, on_empty=lambda: None, on_refused=lambda error: _fail(),
            on_crash=_fail, limited=frozenset(), runners=lambda: Runners(threads=1, loop=0),
        )  # fmt: skip
        self.keeper = LeaseKeeper(broker, "worker-a", ("default",), self.held, 1200.0, _fail)
        writer = AckWriter(broker, "worker-a", self.held, executor.progress, lambda: None, _fail)
        parts = RunnerParts(
            buffer=self.buffer, executor=executor, writer=writer, held=self.held,
            pacer=Pacer(broker, lambda reservations: None, self.buffer.put_many),
            cancelled_steps=CancelledSteps(broker), sync_ack=False, on_task_done=lambda: None,
        )  # fmt: skip
        self.thread = WorkerThread(0, parts, _fail)


def test_a_reservation_buffered_across_a_suspend_past_lease_ttl_is_not_started(
    host: SuspendableHost,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reaper handed the task to another worker while the host slept: started on resume,
    it ran twice. CLOCK_MONOTONIC said the reservation was seconds old."""
    task_id = tasks.square.enqueue(7).id
    process = Process(backend)
    process.prefetcher._round()  # a refill reserves it; it waits behind a running task
    process.keeper.renew()
    [reservation] = process.buffer.close()
    # Fresh, though the host slept before: reserved and renewed on the clock it is judged by.
    assert not process.held.may_have_lapsed(reservation.lease)

    host.suspend(LEASE_TTL_S + 1)
    redis_clock_runs_on(broker, redis_client, task_id, LEASE_TTL_S + 1)
    assert reap_once(backend).released == 1  # another host's reaper, while this one slept
    assert drain(backend.alias) == 1  # and another worker ran the task

    with caplog.at_level(logging.WARNING, "django_threadmill.worker.runner"):
        assert process.thread.begin(reservation) is None  # the resumed thread skips it
    assert f"Skipped task whose reservation may have lapsed task_id={task_id}" in caplog.text
    result = backend.get_result(task_id)
    assert (result.status, result.attempts, result.return_value) == (
        TaskResultStatus.SUCCESSFUL,
        1,
        49,
    )


class CountedRenewals(Broker):
    """The real broker, counting the renewals Redis took."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.renewed = 0

    def renew(
        self, worker_id: str, leases: Sequence[Lease], served: Iterable[str] = (), *,
        threads: int = 0,
    ) -> list[str]:  # fmt: skip
        lost = super().renew(worker_id, leases, served, threads=threads)
        self.renewed += 1
        return lost


@pytest.fixture
def counted(broker: Broker) -> Iterator[CountedRenewals]:
    renewals = CountedRenewals(broker)
    yield renewals
    renewals.client.close()


def test_a_resumed_host_renews_its_running_leases_at_once_not_an_interval_later(
    host: SuspendableHost,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    counted: CountedRenewals,
    redis_client: redis.Redis,
) -> None:
    """Suspended for three quarters of lease_ttl just after a renewal, the lease keeper slept on
    a third of lease_ttl (its interval) after the resume, as CLOCK_MONOTONIC counts: the lease of
    the running task lapsed meanwhile, for a reaper elsewhere to hand out beside it."""
    task_id = tasks.square.enqueue(7).id
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.start("worker-a", [Start(lease=reservation.lease, started_ms=now_ms())]) == []
    held = HeldLeases(LEASE_TTL_S)
    held.add([reservation.lease])
    keeper = LeaseKeeper(counted, "worker-a", ("default",), held, LEASE_TTL_S / 3, _fail)
    keeper.start()
    try:
        wait_until(lambda: counted.renewed == 1, "the renewal at start")
        host.suspend(LEASE_TTL_S * 3 / 4)
        suspended_deadline = redis_clock_runs_on(broker, redis_client, task_id, LEASE_TTL_S * 3 / 4)
        wait_until(lambda: counted.renewed == 2, "a renewal once the host resumed")
    finally:
        keeper.stop()
        keeper.join(30)
    renewed_deadline = redis_client.zscore(broker.queue_keys("default").leases, task_id)
    assert renewed_deadline is not None
    assert renewed_deadline > suspended_deadline
    assert held.holds(reservation.lease)
    assert not held.may_have_lapsed(reservation.lease)
