"""A retried task keeps its id, goes through the delayed set, and succeeds on attempt 3.

The worker's part is played here through the broker with the same calls the worker makes
(acquire, start, finish); test_worker_lifecycle.py runs the real worker command.
"""

import json
from dataclasses import replace
from datetime import timedelta

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Finish, Lease, Outcome, Start
from django_threadmill.codec.jsoncodec import dumps
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskContext, TaskResultStatus
from django_threadmill.retry import retry_delay

from .tasks import flaky


def attempt(backend: ThreadmillTaskBackend, broker: Broker, worker: str) -> tuple[Lease, Finish]:
    """Run one attempt of the one ready ``flaky`` task as a worker would; return its outcome."""
    [reservation] = broker.acquire("default", 10).reservations
    lease = reservation.lease
    assert broker.start(worker, [Start(lease=lease, started_ms=now_ms())]) == []
    result = backend.get_result(lease.task_id)
    try:
        value = flaky.call(TaskContext(task_result=result), *result.args)
    except ValueError as exc:
        delay = retry_delay(flaky, result, exc)
        outcome = Outcome.FAILED if delay is None else Outcome.RETRY
        delay_ms = 0 if delay is None else int(delay.total_seconds() * 1000)
        finish = Finish(
            lease=lease,
            outcome=outcome,
            value=error_json(exc),
            started_ms=now_ms(),
            finished_ms=now_ms(),
            retry_delay_ms=delay_ms,
        )
    else:
        finish = Finish(
            lease=lease,
            outcome=Outcome.SUCCESSFUL,
            value=dumps(value),
            started_ms=now_ms(),
            finished_ms=now_ms(),
        )
    assert broker.finish(worker, [finish]) == []
    return lease, finish


def test_retried_task_succeeds_on_attempt_three_with_two_errors(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = flaky.enqueue(2).id  # fails attempts 1 and 2
    outcomes = []
    for n in (1, 2, 3):
        lease, finish = attempt(backend, broker, f"worker-{n}")
        assert lease.task_id == task_id
        outcomes.append(finish.outcome)
        if finish.outcome is Outcome.RETRY:
            # The retry waits in the delayed set (due now: NO_WAIT), never straight in ready.
            keys = broker.queue_keys("default")
            assert redis_client.zscore(keys.delayed, task_id) is not None
            assert redis_client.zcard(keys.ready) == 0
            assert backend.get_result(task_id).status == TaskResultStatus.READY

    assert outcomes == [Outcome.RETRY, Outcome.RETRY, Outcome.SUCCESSFUL]
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert result.attempts == 3
    assert result.worker_ids == ["worker-1", "worker-2", "worker-3"]
    assert [e.exception_class for e in result.errors] == [ValueError, ValueError]
    assert "attempt 1 fails on purpose" in result.errors[0].traceback
    assert "attempt 2 fails on purpose" in result.errors[1].traceback


def test_retries_stop_at_max_attempts_and_the_task_fails(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    task_id = flaky.enqueue(5).id  # would fail 5 times; the policy allows 3 attempts
    outcomes = [attempt(backend, broker, "worker")[1].outcome for _ in range(3)]
    assert outcomes == [Outcome.RETRY, Outcome.RETRY, Outcome.FAILED]
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3
    assert broker.acquire("default", 10).reservations == []


def test_the_retry_delay_is_the_policy_delay(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    slow_retry = replace(flaky, retry=lambda context: timedelta(hours=1))
    task_id = flaky.enqueue(1).id
    [reservation] = broker.acquire("default", 10).reservations
    result = backend.get_result(task_id)
    delay = retry_delay(slow_retry, result, ValueError())
    assert delay == timedelta(hours=1)
    finish = Finish(
        lease=reservation.lease,
        outcome=Outcome.RETRY,
        value=json.dumps({}),
        started_ms=0,
        finished_ms=0,
        retry_delay_ms=int(delay.total_seconds() * 1000),
    )
    assert broker.finish("worker", [finish]) == []
    due_ms = redis_client.zscore(broker.queue_keys("default").delayed, task_id)
    seconds, _ = redis_client.time()
    assert due_ms is not None
    assert due_ms > (seconds + 3500) * 1000
    assert broker.acquire("default", 10).reservations == []


def test_a_scheduled_retry_wakes_an_idle_fetcher(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """Regression: an idle fetcher slept its whole block (5 s) before seeing a due retry."""
    flaky.enqueue(1)
    wake = broker.queue_keys("default").wake
    [reservation] = broker.acquire("default", 10).reservations
    redis_client.delete(wake)  # the fetcher consumed every token and now blocks
    retry = Finish(
        lease=reservation.lease, outcome=Outcome.RETRY, value="{}", started_ms=0, finished_ms=0
    )
    assert broker.finish("worker", [retry]) == []
    assert redis_client.llen(wake) == 1
