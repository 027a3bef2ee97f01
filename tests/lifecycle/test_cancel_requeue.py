"""Cancel a waiting task and requeue a failed one, fenced against any running attempt."""

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Outcome
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus
from django_threadmill.exceptions import Cancelled, LeaseExpired
from django_threadmill.worker.reaper import reap_once

from .support import ack, reserve, run, wait_for_expiry
from .tasks import plain


@pytest.mark.parametrize("delay", [None, timedelta(days=30)], ids=["ready", "delayed"])
def test_cancel_fails_a_waiting_task_with_a_cancelled_error(
    delay: timedelta | None,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
) -> None:
    task = plain if delay is None else plain.using(run_after=timezone.now() + delay)
    task_id = task.enqueue().id

    assert backend.cancel(task_id, reason="by the test") is True

    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    assert result.worker_ids == []
    [error] = result.errors
    assert error.exception_class is Cancelled
    assert "Cancelled before it ran: by the test" in error.traceback
    keys = broker.queue_keys("default")
    assert redis_client.zcard(keys.ready) + redis_client.zcard(keys.delayed) == 0
    assert redis_client.zrange(keys.done, 0, -1) == [task_id]
    assert reserve(broker) == []


def test_cancel_does_not_touch_a_reserved_running_or_finished_task(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    reserved = plain.enqueue().id
    reserve(broker)
    running = plain.enqueue().id
    [lease] = run(broker)
    assert backend.cancel(reserved) is False
    assert backend.cancel(running) is False
    assert ack(broker, lease)  # the attempt that was running records its outcome
    assert backend.cancel(running) is False
    assert backend.get_result(running).status == TaskResultStatus.SUCCESSFUL
    assert backend.get_result(reserved).errors == []


def test_cancel_and_requeue_of_an_unknown_id_raise(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        backend.cancel("0" * 32 + "@default")
    with pytest.raises(TaskResultDoesNotExist):
        backend.requeue("not-one-of-ours")


def test_requeue_gives_a_failed_task_a_new_attempt_with_history_kept(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    [first] = run(broker)
    assert ack(broker, first, Outcome.FAILED)

    assert backend.requeue(task_id) is True

    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.READY
    assert result.finished_at is None
    assert len(result.errors) == 1
    key = broker.record_key(task_id)
    assert key is not None
    assert redis_client.pttl(key) == -1  # pending again: no TTL
    [second] = run(broker, worker="test-worker-2")
    assert second.task_id == task_id
    assert not ack(broker, first)  # the old attempt's late ack is fenced out
    assert ack(broker, second)
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.worker_ids == ["test-worker-1", "test-worker-2"]
    assert len(result.errors) == 1


def test_a_task_cancelled_while_delayed_is_requeued_to_wait_for_its_run_after(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """A requeue undoes a cancel: the task waits for its run_after again. It went to ready,
    and ran at once, a month early."""
    run_after = timezone.now() + timedelta(days=30)
    task_id = plain.using(run_after=run_after).enqueue().id
    assert backend.cancel(task_id) is True

    assert backend.requeue(task_id) is True

    keys = broker.queue_keys("default")
    assert redis_client.zrange(keys.delayed, 0, -1, withscores=True) == [
        (task_id, float(int(run_after.timestamp() * 1000)))
    ]
    assert redis_client.zcard(keys.ready) == 0
    assert reserve(broker) == []
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.READY
    assert abs(result.task.run_after - run_after) < timedelta(milliseconds=1)


def test_a_task_whose_run_after_passed_is_requeued_ready(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue().id
    [lease] = run(broker)
    assert ack(broker, lease, Outcome.FAILED)

    assert backend.requeue(task_id) is True

    keys = broker.queue_keys("default")
    assert redis_client.zrange(keys.ready, 0, -1) == [task_id]
    assert redis_client.zcard(keys.delayed) == 0


def test_requeue_refuses_waiting_running_and_successful_tasks(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    waiting = plain.enqueue().id
    assert backend.requeue(waiting) is False
    [lease] = run(broker)
    assert backend.requeue(waiting) is False  # now running
    assert ack(broker, lease)
    assert backend.requeue(waiting) is False  # now successful
    assert backend.get_result(waiting).status == TaskResultStatus.SUCCESSFUL


def test_requeue_after_a_reap_fences_out_the_lost_worker(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.enqueue().id
    [lost] = run(broker)
    wait_for_expiry(broker, redis_client)
    assert reap_once(backend).failed == 1
    assert backend.requeue(task_id) is True
    assert not ack(broker, lost)  # the lost worker comes back: stale, whatever the state
    [fresh] = run(broker, worker="test-worker-2")
    assert not ack(broker, lost)
    assert ack(broker, fresh)
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert [e.exception_class for e in result.errors] == [LeaseExpired]
