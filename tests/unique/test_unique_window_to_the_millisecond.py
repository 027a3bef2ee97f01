"""A ``unique_for`` window is kept to the millisecond: it was reckoned through a float,
``int(total_seconds() * 1000)``, which made ``timedelta(milliseconds=1001)`` a window of 1000 ms."""

from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task
from django_threadmill.task import task


@task(unique_for=timedelta(milliseconds=1001))
def sync_1001_ms(account: int) -> int:
    return account


@task(unique_for=timedelta(seconds=1, milliseconds=3))
def sync_1003_ms(account: int) -> int:
    return account


@task(unique_for=timedelta(milliseconds=1, microseconds=999))
def sync_1999_us(account: int) -> int:
    return account


@pytest.mark.parametrize(
    ("unique", "window_ms"), [(sync_1001_ms, "1001"), (sync_1003_ms, "1003"), (sync_1999_us, "1")]
)
def test_the_window_stored_is_the_one_given(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, unique: Task, window_ms: str
) -> None:
    """The record keeps the window a requeue claims again; a part of a millisecond is dropped."""
    result = unique.enqueue(1)
    record = backend.broker.queue_keys("default").record(result.id)
    assert redis_client.hget(record, "unique_ms") == window_ms
