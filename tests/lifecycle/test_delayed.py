"""Deferred tasks: READY with their run_after, never acquired early, promoted when due."""

from datetime import timedelta

import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus

from .support import reserve
from .tasks import plain


def test_deferred_task_reads_ready_with_its_run_after(backend: ThreadmillTaskBackend) -> None:
    run_after = timezone.now() + timedelta(hours=1)
    task_id = plain.using(run_after=run_after).enqueue().id
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.READY
    assert result.task.run_after is not None
    assert abs(result.task.run_after - run_after) < timedelta(milliseconds=1)


def test_deferred_task_is_not_acquired_before_it_is_due(broker: Broker) -> None:
    plain.using(run_after=timezone.now() + timedelta(hours=1)).enqueue()
    acquired = broker.acquire("default", 10)
    assert acquired.reservations == []
    assert acquired.next_due_ms is not None
    assert 3_500_000 < acquired.next_due_ms <= 3_600_000


def test_a_one_year_delay_keeps_the_record_without_ttl(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.using(run_after=timezone.now() + timedelta(days=365)).enqueue().id
    key = broker.record_key(task_id)
    assert key is not None
    assert redis_client.pttl(key) == -1
    assert redis_client.zscore(broker.queue_keys("default").delayed, task_id) is not None
    assert backend.get_result(task_id).status == TaskResultStatus.READY


def test_due_tasks_are_promoted_by_acquire_in_priority_order(
    broker: Broker, redis_client: redis.Redis
) -> None:
    run_after = timezone.now() + timedelta(hours=1)
    low = plain.using(run_after=run_after, priority=-10).enqueue().id
    high = plain.using(run_after=run_after, priority=10).enqueue().id
    middle = plain.using(priority=0).enqueue().id  # ready now
    assert [r.lease.task_id for r in reserve(broker)] == [middle]
    # Make both due without waiting an hour: move their due time into the past.
    redis_client.zadd(broker.queue_keys("default").delayed, {low: 0, high: 0})
    assert [r.lease.task_id for r in reserve(broker)] == [high, low]
    assert redis_client.zcard(broker.queue_keys("default").delayed) == 0
