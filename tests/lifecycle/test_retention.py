"""Finished results expire result_ttl after finish (None keeps them); pending never expires."""

from datetime import timedelta

import pytest
import redis
from django.test import override_settings
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Outcome
from django_threadmill.compat import TaskResultStatus, task_backends
from tests.conftest import tasks_setting

from .support import ack, reserve, run
from .tasks import plain


def pttl(redis_client: redis.Redis, broker: Broker, task_id: str) -> int:
    key = broker.record_key(task_id)
    assert key is not None
    return int(redis_client.pttl(key))


@pytest.mark.parametrize(
    ("result_ttl", "low_ms", "high_ms"),
    [
        ({}, 86_000_000, 86_400_000),  # the default: one day
        ({"result_ttl": timedelta(minutes=5)}, 290_000, 300_000),
        ({"result_ttl": 30}, 25_000, 30_000),
    ],
    ids=["default", "timedelta", "seconds"],
)
def test_finished_results_expire_after_result_ttl(
    result_ttl: dict[str, object],
    low_ms: int,
    high_ms: int,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
) -> None:
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **result_ttl)):
        broker = task_backends["default"].broker
        ok, bad = plain.enqueue().id, plain.enqueue().id
        first, second = run(broker)
        assert ack(broker, first)
        assert ack(broker, second, Outcome.FAILED)
        assert low_ms < pttl(redis_client, broker, ok) <= high_ms
        assert low_ms < pttl(redis_client, broker, bad) <= high_ms


def test_result_ttl_none_keeps_results_forever(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, result_ttl=None)):
        broker = task_backends["default"].broker
        task_id = plain.enqueue().id
        [lease] = run(broker)
        assert ack(broker, lease)
        assert pttl(redis_client, broker, task_id) == -1
        assert task_backends["default"].get_result(task_id).status == TaskResultStatus.SUCCESSFUL


def test_nothing_pending_expires(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    delayed = plain.using(run_after=timezone.now() + timedelta(days=400)).enqueue().id
    running = plain.enqueue().id
    run(broker)
    reserved = plain.enqueue().id
    reserve(broker)
    ready = plain.enqueue().id
    for task_id in (delayed, running, reserved, ready):
        assert pttl(redis_client, broker, task_id) == -1


def test_the_done_index_is_trimmed_when_metrics_are_sent(
    broker: Broker, redis_client: redis.Redis
) -> None:
    done = broker.queue_keys("default").done
    redis_client.zadd(done, {"expired-long-ago@default": 0})  # finished at the epoch
    plain.enqueue()
    [lease] = run(broker)
    assert ack(broker, lease)
    assert redis_client.zrange(done, 0, -1) == [lease.task_id]
