"""A task a killed worker held reserved, never started, gives its rate-limited queue back the
reservation turn it took when the reaper requeues it, as a live worker's hand-back does: under
"1/h" the task waited an hour more though it never ran (docs/schedules.md, Per-queue limits).
Starts keep their own turn, so no more tasks start per period."""

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Start
from django_threadmill.codec.times import now_ms
from django_threadmill.worker.reaper import reap_once
from tests.support import Command, wait_until

from .tasks import stamp

LIMITS = {"queue_limits": {"emails": {"rate": "1/h"}}}
AN_HOUR_MS = 3_600_000


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def reserved_ids(broker: Broker) -> list[str]:
    return [r.lease.task_id for r in broker.acquire("emails", 10).reservations]


def test_a_reservation_reaped_after_its_worker_was_killed_is_reserved_again_at_once(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    broker = backend.broker
    keys = broker.queue_keys("emails")
    # Another worker's task started a moment ago: this one's start turn is an hour off, so the
    # worker reserves the task and holds it, unstarted, while it waits for that turn.
    redis_client.set(keys.paced, broker.server_time_ms() + AN_HOUR_MS)
    waiting = stamp.enqueue(str(tmp_path / "stamps.log"))
    record = broker.record_key(waiting.id)
    assert record is not None
    args = ("--queue", "emails", "--threads", "1", "--reap-interval", "0")
    worker = start_worker(*args, lease_ttl_s=2, options=LIMITS)
    wait_until(lambda: redis_client.hget(record, "state") == "reserved", "the task reserved")
    [pid] = worker.child_pids()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: worker.child_pids() not in ([], [pid]), "the process restarted")
    worker.signal(signal.SIGTERM)  # the restarted process would take the turn given back
    assert worker.wait() == 0, worker.log
    redis_client.zadd(keys.leases, {waiting.id: 1}, xx=True)  # its lease lapsed
    assert reap_once(backend).released == 1
    assert reserved_ids(broker) == [waiting.id]
    assert redis_client.hget(record, "state") == "reserved"


def test_one_turn_is_given_back_per_reservation_reaped_and_none_by_a_dry_run(
    broker: Broker, redis_client: redis.Redis, tmp_path: Path
) -> None:
    keys = broker.queue_keys("emails")
    first, _second = (stamp.enqueue(str(tmp_path / "stamps.log")) for _ in range(2))
    assert reserved_ids(broker) == [first.id]
    redis_client.zadd(keys.leases, {first.id: 1}, xx=True)  # its worker was killed
    assert broker.reap("emails", 100, dry_run=True).released == [first.id]
    assert reserved_ids(broker) == []  # a dry run gives no turn back
    assert broker.reap("emails", 100).released == [first.id]
    assert reserved_ids(broker) == [first.id]
    assert reserved_ids(broker) == []  # one turn given back, not the rate lifted


def test_a_running_attempt_reaped_gives_no_turn_back(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, tmp_path: Path
) -> None:
    broker = backend.broker
    keys = broker.queue_keys("emails")
    for _ in range(2):
        stamp.enqueue(str(tmp_path / "stamps.log"))
    (reservation,) = broker.acquire("emails", 10).reservations
    broker.start("worker-a", [Start(lease=reservation.lease, started_ms=now_ms())])
    redis_client.zadd(keys.leases, {reservation.lease.task_id: 1}, xx=True)
    reap_once(backend)  # its attempt ran: its turn was used
    assert reserved_ids(broker) == []
