"""Two reapers and a late ack racing over the same expired attempts: exactly one outcome wins."""

import threading
from collections.abc import Callable

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reap_report import ReapReport
from django_threadmill.worker.reaper import reap_once

from .support import WORKER, ack, reserve, run, wait_for_expiry
from .tasks import plain, retried

TASKS = 200


def race(*contenders: Callable[[], None]) -> None:
    """Run ``contenders`` in threads released together by a barrier; re-raise any failure."""
    barrier = threading.Barrier(len(contenders))
    failures: list[BaseException] = []

    def contend(contender: Callable[[], None]) -> None:
        try:
            barrier.wait(timeout=10)
            contender()
        except BaseException as exc:  # re-raised in the test thread below
            failures.append(exc)

    threads = [
        threading.Thread(target=contend, args=(c,), name=f"race-{n}")
        for n, c in enumerate(contenders)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "a racer never finished"
    if failures:
        raise failures[0]


@pytest.mark.parametrize("task", [plain, retried], ids=["fail", "retry"])
def test_two_reapers_and_a_late_ack_leave_exactly_one_outcome_per_attempt(
    task: object,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
) -> None:
    ids = [task.enqueue().id for _ in range(TASKS)]  # type: ignore[attr-defined]
    leases = run(broker)
    wait_for_expiry(broker, redis_client)
    reports: list[ReapReport] = []
    acked: list[Lease] = []

    def reaper() -> None:
        reports.append(reap_once(backend, batch_size=25))

    def late_worker() -> None:
        acked.extend(lease for lease in leases if ack(broker, lease))

    race(reaper, reaper, late_worker)

    settled_by_reapers = sum(r.failed + r.retried for r in reports)
    assert settled_by_reapers + len(acked) == TASKS
    assert sum(r.stale for r in reports) <= TASKS
    acked_ids = {lease.task_id for lease in acked}
    for task_id in ids:
        result = backend.get_result(task_id)
        if task_id in acked_ids:
            assert result.status == TaskResultStatus.SUCCESSFUL
            assert result.errors == []
        else:
            assert result.status in (TaskResultStatus.FAILED, TaskResultStatus.READY)
            assert len(result.errors) == 1
    assert redis_client.zcard(broker.queue_keys("default").leases) == 0


def test_a_late_ack_after_the_reap_is_a_no_op(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    [lease] = run(broker)
    wait_for_expiry(broker, redis_client)
    assert reap_once(backend).failed == 1
    assert not ack(broker, lease)
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED


def test_a_reap_after_the_ack_finds_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    [lease] = run(broker)
    wait_for_expiry(broker, redis_client)
    assert ack(broker, lease)
    report = reap_once(backend)
    assert (report.failed, report.retried, report.stale) == (0, 0, 0)
    assert backend.get_result(task_id).status == TaskResultStatus.SUCCESSFUL


def test_two_reapers_and_a_late_start_notice_release_each_reservation_once(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    for _ in range(TASKS):
        plain.enqueue()
    leases = [reservation.lease for reservation in reserve(broker)]
    wait_for_expiry(broker, redis_client)
    reports: list[ReapReport] = []
    stale_starts: list[Start] = []

    def reaper() -> None:
        reports.append(reap_once(backend, batch_size=25))

    def late_worker() -> None:
        for lease in leases:
            stale_starts.extend(broker.start(WORKER, [Start(lease=lease, started_ms=now_ms())]))

    race(reaper, reaper, late_worker)

    started = TASKS - len(stale_starts)
    assert sum(r.released for r in reports) + started == TASKS
    statuses = [backend.get_result(lease.task_id).status for lease in leases]
    assert statuses.count(TaskResultStatus.RUNNING) == started
    assert statuses.count(TaskResultStatus.READY) == TASKS - started
    assert redis_client.zcard(broker.queue_keys("default").ready) == TASKS - started
