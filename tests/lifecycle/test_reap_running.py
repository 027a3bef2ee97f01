"""An expired running attempt becomes FAILED with a lease error, or is retried by its policy."""

import json
import logging
from datetime import UTC, datetime

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.worker.reaper import reap_once

from .support import WORKER, run, wait_for_expiry
from .tasks import custom_policy, plain, retried


def broken() -> None:
    """Not a task: a plain function, as if its @task decorator had been removed."""


def lease_deadline(broker: Broker, redis_client: redis.Redis, task_id: str) -> str:
    score = redis_client.zscore(broker.queue_keys("default").leases, task_id)
    assert score is not None
    return datetime.fromtimestamp(score / 1000, tz=UTC).isoformat(timespec="milliseconds")


def test_expired_running_attempt_fails_with_a_lease_error_naming_worker_and_deadline(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    deadline = lease_deadline(broker, redis_client, task_id)
    wait_for_expiry(broker, redis_client)

    with caplog.at_level(logging.ERROR, logger="django_threadmill.worker.reaper"):
        report = reap_once(backend)

    assert (report.failed, report.retried, report.released) == (1, 0, 0)
    assert report.queues["default"].failed == 1
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    assert result.worker_ids == [WORKER]
    assert result.finished_at is not None
    [error] = result.errors
    assert error.exception_class is LeaseExpired
    assert f"Worker {WORKER} stopped renewing its lease; deadline {deadline}." in error.traceback
    assert [
        r.getMessage() for r in caplog.records if r.name == "django_threadmill.worker.reaper"
    ] == [f"Lease expired, task FAILED task_id={task_id} worker={WORKER}"]
    key = broker.record_key(task_id)
    assert key is not None
    assert redis_client.pttl(key) > 0  # a finished record gets result_ttl
    assert redis_client.zcard(broker.queue_keys("default").leases) == 0


def test_expired_attempt_of_a_task_with_a_policy_is_retried_same_id_history_kept(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = retried.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)

    report = reap_once(backend)

    assert (report.failed, report.retried) == (0, 1)
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.READY
    assert [e.exception_class for e in result.errors] == [LeaseExpired]
    assert result.worker_ids == [WORKER]
    key = broker.record_key(task_id)
    assert key is not None
    assert redis_client.pttl(key) == -1  # nothing pending expires
    [lease] = run(broker, worker="test-worker-2")  # the retry goes through delayed, due now
    assert lease.task_id == task_id
    assert backend.get_result(task_id).worker_ids == [WORKER, "test-worker-2"]


def test_policy_exhausted_by_lease_losses_fails_the_task(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = retried.enqueue().id  # max_attempts=3
    outcomes = []
    for _ in range(3):
        run(broker)
        wait_for_expiry(broker, redis_client)
        report = reap_once(backend)
        outcomes.append((report.retried, report.failed))
    assert outcomes == [(1, 0), (1, 0), (0, 1)]
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3
    assert result.attempts == 3


def test_custom_policy_delay_puts_the_retry_in_the_delayed_set(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = custom_policy.enqueue().id  # retries every 10 s
    run(broker)
    wait_for_expiry(broker, redis_client)
    assert reap_once(backend).retried == 1
    due_ms = redis_client.zscore(broker.queue_keys("default").delayed, task_id)
    seconds, micros = redis_client.time()
    assert due_ms is not None
    assert 5_000 < due_ms - (seconds * 1000 + micros // 1000) <= 10_000
    assert broker.acquire("default", 10).reservations == []


@pytest.mark.parametrize(
    "path", ["gone.module.task", "os.path.join", "tests.lifecycle.test_reap_running.broken"]
)
def test_an_unloadable_payload_is_failed_not_retried(
    path: str, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = retried.enqueue().id
    key = broker.record_key(task_id)
    assert key is not None
    payload = json.loads(redis_client.hget(key, "payload") or "")
    redis_client.hset(key, "payload", json.dumps(payload | {"path": path}))
    run(broker)
    wait_for_expiry(broker, redis_client)

    assert reap_once(backend).failed == 1
    assert redis_client.hget(key, "state") == "failed"
    assert "LeaseExpired" in (redis_client.hget(key, "error:1") or "")


def test_every_queue_is_reaped_in_batches_with_counts_per_queue(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    for _ in range(7):
        plain.enqueue()
        plain.using(queue_name="emails").enqueue()
    run(broker, "default")
    run(broker, "emails")
    wait_for_expiry(broker, redis_client, "default")
    wait_for_expiry(broker, redis_client, "emails")

    report = reap_once(backend, batch_size=3)

    assert {queue: counts.failed for queue, counts in report.queues.items()} == {
        "default": 7,
        "emails": 7,
        "reports": 0,  # configured, never enqueued to: looked at all the same
    }
    assert report.failed == 14


def test_dry_run_lists_what_it_would_do_and_changes_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    failing = plain.enqueue().id
    retrying = retried.enqueue().id
    run(broker)
    waiting = plain.enqueue().id
    broker.acquire("default", 1)
    wait_for_expiry(broker, redis_client)

    report = reap_once(backend, dry_run=True)

    assert (report.released, report.failed, report.retried) == (1, 1, 1)
    actions = {line.split()[1]: line.split()[2] for line in report.lines}
    assert actions == {
        f"task_id={waiting}": "action=release",
        f"task_id={failing}": "action=fail",
        f"task_id={retrying}": "action=retry",
    }
    assert all(line.startswith("queue=default ") for line in report.lines)
    states = [backend.get_result(i).status for i in (failing, retrying)]
    assert states == [TaskResultStatus.RUNNING] * 2
    assert redis_client.zcard(broker.queue_keys("default").leases) == 3
