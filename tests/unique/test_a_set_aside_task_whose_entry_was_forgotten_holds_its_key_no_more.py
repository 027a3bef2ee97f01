"""A unique task set aside holds its key no more once an operator forgot its damaged entry.

A record set aside (docs/lifecycle.md, Damaged records) is out of every index and never runs.
Its key was given up only while P:damaged listed it: once the operator did as the docs say
(restore the record, then ``threadmill_queue forget-damaged``), the task read as READY or
RUNNING again, and until its window ended every equal enqueue got it back, storing nothing,
and a requeue of an equal failed task was refused as ``UniqueKeyHeld`` naming it.
"""

from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.backend_support import fail, start
from tests.support import Command, run_to_completion, worker

from .tasks import append_once, refresh

pytestmark = pytest.mark.usefixtures("backend")


def forget_damaged(redis_url: str, key_prefix: str, task_id: str) -> None:
    """Forget ``task_id``'s damaged entry as an operator does, with the real command."""
    command = ("threadmill_queue", "forget-damaged", "default", task_id)
    forget = Command(redis_url, key_prefix, *command)
    assert "Forgot 1 damaged record(s) of queue default." in run_to_completion(forget)


def set_aside_and_restored(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    task_id: str,
) -> None:
    """Have a burst worker set ``task_id`` aside (its payload gone), then restore the record
    and forget its entry, as docs/lifecycle.md tells an operator to."""
    keys = backend.broker.queue_keys("default")
    payload = redis_client.hget(keys.record(task_id), "payload")
    redis_client.hdel(keys.record(task_id), "payload")
    run_to_completion(worker(redis_url, key_prefix, "--processes", "0", "--burst"))
    assert redis_client.hget(keys.damaged, task_id).endswith(" acquire: no payload field")
    redis_client.hset(keys.record(task_id), "payload", payload)
    forget_damaged(redis_url, key_prefix, task_id)


def test_an_equal_enqueue_is_stored_and_runs(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    first = append_once.enqueue(str(log))
    set_aside_and_restored(backend, redis_client, redis_url, key_prefix, first.id)

    second = append_once.enqueue(str(log))
    run_to_completion(worker(redis_url, key_prefix, "--processes", "0", "--burst"))

    assert second.id != first.id
    second.refresh()
    assert second.status == TaskResultStatus.SUCCESSFUL
    assert log.read_text() == "ran\n"
    assert backend.get_result(first.id).status == TaskResultStatus.READY  # still never runs


def test_an_equal_enqueue_after_a_running_task_the_reaper_set_aside_is_stored(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    raw_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    keys = backend.broker.queue_keys("default")
    first = refresh.enqueue(1)
    start(backend, first.id)
    raw_client.hset(keys.record(first.id), "workers", b"host\xc3:1")
    redis_client.zadd(keys.leases, {first.id: 0})  # its lease lapsed: its worker died
    run_to_completion(Command(redis_url, key_prefix, "threadmill_reap", "--once"))
    assert redis_client.hget(keys.record(first.id), "state") == "running"  # as reap found it
    forget_damaged(redis_url, key_prefix, first.id)

    second = refresh.enqueue(1)

    assert second.id != first.id
    assert second.status == TaskResultStatus.READY
    raw_client.delete(keys.record(first.id))  # bytes that are not UTF-8 fail the leak guard's read


def test_a_requeue_of_an_equal_failed_task_takes_the_key(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    second = refresh.enqueue(1)
    set_aside_and_restored(backend, redis_client, redis_url, key_prefix, second.id)

    assert backend.requeue(first.id)

    assert refresh.enqueue(1).id == first.id
