"""Helpers for the broker tests: build tasks, read and age raw Redis state."""

import json
import uuid
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Finish, Lease, NewTask, Outcome, Start
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.codec.ids import make_task_id
from django_threadmill.codec.times import now_ms

WORKER = "worker-a"


def new_task(
    queue: str = "default", *, priority: int = 0, run_after_ms: int | None = None
) -> NewTask:
    """Return a task for ``queue`` whose payload names the example echo task."""
    task_id = make_task_id(uuid.uuid4().hex, queue)
    payload = json.dumps(
        {"path": "testproject.example.tasks.echo", "args": [task_id], "kwargs": {}}
    )
    return NewTask(
        id=task_id,
        payload=payload,
        priority=priority,
        run_after_ms=run_after_ms,
    )


def fill(broker: Broker, queue: str, n: int) -> list[str]:
    """Enqueue ``n`` tasks to ``queue``; return their ids."""
    tasks = [new_task(queue) for _ in range(n)]
    broker.enqueue(queue, tasks)
    return [task.id for task in tasks]


def finish(lease: Lease, outcome: Outcome = Outcome.SUCCESSFUL, value: str = "1") -> Finish:
    """Return a finish of ``lease`` with ``value`` as its result or error JSON."""
    return Finish(
        lease=lease, outcome=outcome, value=value, started_ms=now_ms(), finished_ms=now_ms()
    )


def redis_now_ms(client: redis.Redis) -> int:
    """The Redis server's clock in ms, the one clock the scripts read."""
    seconds, micros = client.time()
    return seconds * 1000 + micros // 1000


def start(lease: Lease) -> Start:
    return Start(lease=lease, started_ms=now_ms())


@pytest.fixture
def keys(broker: Broker) -> QueueKeys:
    """The keys of the "default" queue."""
    return broker.queue_keys("default")


@pytest.fixture
def enqueue(broker: Broker) -> Callable[..., NewTask]:
    """Enqueue one new task (``new_task`` arguments) and return it."""

    def enqueue_one(queue: str = "default", **fields: object) -> NewTask:
        task = new_task(queue, **fields)  # type: ignore[arg-type]
        assert broker.enqueue(queue, [task]).stored == 1
        return task

    return enqueue_one


@pytest.fixture
def reserve(broker: Broker, enqueue: Callable[..., NewTask]) -> Callable[[], Lease]:
    """Enqueue one task to "default" and acquire it; return its lease."""

    def reserve_one() -> Lease:
        task = enqueue()
        reservations = broker.acquire("default", 1).reservations
        assert [r.lease.task_id for r in reservations] == [task.id]
        return reservations[0].lease

    return reserve_one


@pytest.fixture
def running(broker: Broker, reserve: Callable[[], Lease]) -> Lease:
    """A task that was reserved and started by WORKER."""
    lease = reserve()
    assert broker.start(WORKER, [start(lease)]) == []
    return lease


@pytest.fixture
def expire_lease(redis_client: redis.Redis, keys: QueueKeys) -> Callable[[str], None]:
    """Move a held task's lease deadline into the past, as if its worker went silent."""

    def expire(task_id: str) -> None:
        assert redis_client.zadd(keys.leases, {task_id: 1}, xx=True, ch=True) == 1

    return expire


@pytest.fixture
def snapshot(redis_client: redis.Redis, key_prefix: str) -> Callable[[], dict[str, object]]:
    """Return every key of the test's prefix with its type and content, to compare states."""
    readers: dict[str, Callable[[str], object]] = {
        "hash": redis_client.hgetall,
        "zset": lambda key: redis_client.zrange(key, 0, -1, withscores=True),
        "list": lambda key: redis_client.lrange(key, 0, -1),
        "set": redis_client.smembers,
        "string": redis_client.get,
    }

    def take() -> dict[str, object]:
        return {
            key: readers[redis_client.type(key)](key)
            for key in redis_client.scan_iter(f"{key_prefix}:*")
        }

    return take


@pytest.fixture
def state_of(redis_client: redis.Redis, keys: QueueKeys) -> Callable[[str], str | None]:
    """Return the stored state of a task of the "default" queue."""

    def state(task_id: str) -> str | None:
        return redis_client.hget(keys.record(task_id), "state")

    return state
