"""An admin requeue claims a unique key its holder left behind, as an enqueue does.

A cancel keeps the key (docs/schedules.md, Unique tasks): a failed task requeued while the key
named a cancelled or vanished task ran without it, so the next equal enqueue stored a second
task that ran beside it; and a cancelled task requeued kept what was left of its old window.
"""

from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.backend_support import fail

from .tasks import WINDOW, refresh

pytestmark = pytest.mark.usefixtures("backend")


def unique_key(redis_client: redis.Redis, backend: ThreadmillTaskBackend) -> str:
    """Return the one unique key of the default queue."""
    prefix = backend.broker.queue_keys("default").unique_prefix
    [key] = redis_client.keys(f"{prefix}*")
    return str(key)


def test_a_requeue_takes_the_key_a_cancelled_task_left(backend: ThreadmillTaskBackend) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    cancelled = refresh.enqueue(1)
    assert backend.cancel(cancelled.id)
    assert backend.requeue(first.id)
    assert refresh.enqueue(1).id == first.id  # not a second task beside the requeued one


def test_a_requeue_takes_the_key_of_a_task_that_is_gone(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    gone = refresh.enqueue(1)
    assert backend.cancel(gone.id)
    redis_client.delete(backend.broker.queue_keys("default").record(gone.id))  # its result expired
    assert backend.requeue(first.id)
    assert refresh.enqueue(1).id == first.id


def test_a_requeued_cancelled_task_claims_a_new_window(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    first = refresh.enqueue(1)
    assert backend.cancel(first.id)
    key = unique_key(redis_client, backend)
    redis_client.pexpire(key, 1000)  # as if most of the window had passed since the enqueue
    assert backend.requeue(first.id)
    assert redis_client.get(key) == first.id
    assert redis_client.pttl(key) > (WINDOW - timedelta(minutes=1)) / timedelta(milliseconds=1)


def test_a_requeue_leaves_a_key_of_another_type(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    keys = backend.broker.queue_keys("default")
    key = f"{keys.unique_prefix}{redis_client.hget(keys.record(first.id), 'unique')}"
    redis_client.rpush(key, "written by hand")
    assert backend.requeue(first.id)
    assert redis_client.type(key) == "list"
