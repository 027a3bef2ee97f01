"""A unique task set aside as damaged holds its key no more: an equal enqueue is stored.

A record set aside (docs/lifecycle.md, Damaged records) stays in state ready (acquire) or
running (reap), in no index, so it never runs; the unique key still named it, and an enqueue
or requeue read that state as a holder that had not finished. Until the window ended, every
equal enqueue got back the task that would never run, with no new task stored; with
``unique_for=timedelta.max``, until an operator deleted the key.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.backend_support import fail, start
from tests.support import run_to_completion, worker

from .tasks import append_once, refresh

pytestmark = pytest.mark.usefixtures("backend")


def no_payload(client: redis.Redis, key: str) -> None:
    client.hdel(key, "payload")


def payload_not_utf8(client: redis.Redis, key: str) -> None:
    client.hset(key, "payload", b'{"path":"\xff\xfe"}')


DAMAGE = [(no_payload, "no payload field"), (payload_not_utf8, "payload not UTF-8")]


def unique_key(backend: ThreadmillTaskBackend, redis_client: redis.Redis, task_id: str) -> str:
    keys = backend.broker.queue_keys("default")
    return f"{keys.unique_prefix}{redis_client.hget(keys.record(task_id), 'unique')}"


@pytest.mark.parametrize(("damage", "reason"), DAMAGE, ids=["no payload", "not UTF-8"])
def test_an_enqueue_takes_the_key_of_a_task_acquire_set_aside(
    damage: Callable[[redis.Redis, str], None],
    reason: str,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    raw_client: redis.Redis,
) -> None:
    keys = backend.broker.queue_keys("default")
    first = refresh.enqueue(1)
    key = unique_key(backend, redis_client, first.id)
    damage(raw_client, keys.record(first.id))
    assert backend.broker.acquire("default", 10).reservations == []
    assert redis_client.hget(keys.damaged, first.id).endswith(f" acquire: {reason}")

    second = refresh.enqueue(1)

    assert second.id != first.id
    assert second.status == TaskResultStatus.READY
    assert redis_client.zscore(keys.ready, second.id) is not None
    assert redis_client.get(key) == second.id
    assert refresh.enqueue(1).id == second.id  # the new task holds the key as any other
    raw_client.delete(keys.record(first.id))  # bytes that are not UTF-8 fail the leak guard's read


def test_an_enqueue_takes_the_key_of_a_running_task_the_reaper_set_aside(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, raw_client: redis.Redis
) -> None:
    keys = backend.broker.queue_keys("default")
    first = refresh.enqueue(1)
    start(backend, first.id)
    raw_client.hset(keys.record(first.id), "workers", b"host\xc3:1")
    redis_client.zadd(keys.leases, {first.id: 0})  # its lease lapsed: its worker died
    assert backend.broker.reap("default", 10).set_aside == 1
    assert redis_client.hget(keys.record(first.id), "state") == "running"  # as reap found it

    second = refresh.enqueue(1)

    assert second.id != first.id
    assert redis_client.get(unique_key(backend, redis_client, first.id)) == second.id
    raw_client.delete(keys.record(first.id))


def test_a_requeue_takes_the_key_of_a_task_set_aside(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    keys = backend.broker.queue_keys("default")
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    second = refresh.enqueue(1)
    no_payload(redis_client, keys.record(second.id))
    assert backend.broker.acquire("default", 10).reservations == []

    assert backend.requeue(first.id)

    assert redis_client.get(unique_key(backend, redis_client, first.id)) == first.id
    assert refresh.enqueue(1).id == first.id


def test_a_damaged_list_of_another_type_lists_no_one(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Only read for a would-be duplicate: the holder still holds, and the call does not fail."""
    first = refresh.enqueue(1)
    redis_client.set(backend.broker.queue_keys("default").damaged, "written by hand")

    assert refresh.enqueue(1).id == first.id


def test_a_burst_worker_runs_the_task_enqueued_after_one_it_set_aside(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    first = append_once.enqueue(str(log))
    no_payload(redis_client, backend.broker.queue_keys("default").record(first.id))
    run_to_completion(worker(redis_url, key_prefix, "--processes", "0", "--burst"))

    second = append_once.enqueue(str(log))
    run_to_completion(worker(redis_url, key_prefix, "--processes", "0", "--burst"))

    assert second.id != first.id
    second.refresh()
    assert second.status == TaskResultStatus.SUCCESSFUL
    assert log.read_text() == "ran\n"
