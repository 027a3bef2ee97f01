"""Helpers for the backend tests: play the worker's part through the real broker."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Lease, NewTask, Outcome, Start
from django_threadmill.codec.ids import make_task_id, queue_of
from django_threadmill.codec.jsoncodec import dumps
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import now_ms
from tests.servers.redis_server import RedisProcess, started

WORKER = "worker-test-1"


def new_task(queue: str) -> NewTask:
    """Return a task for ``queue`` as the broker stores it (its payload names no task)."""
    return NewTask(id=make_task_id(uuid4().hex, queue), payload="{}", priority=0,
                   run_after_ms=None)  # fmt: skip


def reserve(backend: ThreadmillTaskBackend, task_id: str) -> Lease:
    """Acquire ``task_id`` (the only ready task of its queue) as a worker would."""
    queue = queue_of(task_id)
    assert queue is not None
    [reservation] = backend.broker.acquire(queue, 1).reservations
    assert reservation.lease.task_id == task_id
    return reservation.lease


def start(backend: ThreadmillTaskBackend, task_id: str, worker: str = WORKER) -> Lease:
    """Reserve and start ``task_id``: it reads as RUNNING afterwards."""
    lease = reserve(backend, task_id)
    assert backend.broker.start(worker, [Start(lease=lease, started_ms=now_ms())]) == []
    return lease


def finish(backend: ThreadmillTaskBackend, lease: Lease, outcome: Outcome, value: str) -> None:
    done = Finish(
        lease=lease, outcome=outcome, value=value, started_ms=now_ms(), finished_ms=now_ms()
    )
    assert backend.broker.finish(WORKER, [done]) == []
    backend.broker.send_metrics()  # as the worker's ack writer does on its own clock


def succeed(backend: ThreadmillTaskBackend, task_id: str, value: object) -> None:
    """Run ``task_id`` to SUCCESSFUL with ``value`` as its return value."""
    finish(backend, start(backend, task_id), Outcome.SUCCESSFUL, dumps(value))


def fail(backend: ThreadmillTaskBackend, task_id: str, error: BaseException) -> None:
    """Run ``task_id`` to FAILED with ``error`` recorded for its attempt."""
    finish(backend, start(backend, task_id), Outcome.FAILED, error_json(error))


class PasswordRedis(RedisProcess):
    """A throwaway redis-server that requires ``password`` (its URL carries it)."""

    def __init__(self, directory: Path, password: str) -> None:
        super().__init__(directory, "--requirepass", password)
        self.password = password

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"


@contextmanager
def redis_with_password(password: str) -> Iterator[PasswordRedis]:
    """Run a PasswordRedis for the duration of the block."""
    with started(
        lambda directory: PasswordRedis(directory, password), "threadmill-redis-auth-"
    ) as server:
        yield server
