"""What tests that build a worker's parts without the command share: WorkerOptions, a broker
that records its acquires and idle waits; a script run as a worker's own Python, and a burst
worker run over tasks that block its event loop."""

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Acquired, Broker, NewTask, Reservation
from django_threadmill.codec.ids import make_task_id
from django_threadmill.worker.ack_writer import AckWriter
from django_threadmill.worker.buffer import Runners, TaskBuffer
from django_threadmill.worker.cancelled_steps import CancelledSteps
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.leases import HeldLeases
from django_threadmill.worker.options import WorkerOptions
from django_threadmill.worker.pacing import Pacer
from django_threadmill.worker.prefetcher import Prefetcher
from django_threadmill.worker.progress import PendingProgress
from django_threadmill.worker.runner import RunnerParts
from tests.support import run_python, run_to_completion, worker

MONITOR_WOKE_LATE = "while its monitor woke late_ms="


def at_task_import() -> None:
    """What ``tests/worker/import_waits_tasks.py`` calls as it is imported: nothing, unless a
    test sets it (to wait there)."""


def worker_options(**changes: Any) -> WorkerOptions:
    """One process of one thread on "default", nothing optional on, with ``changes``."""
    options: dict[str, Any] = {
        "backend_alias": "default",
        "queues": ("default",),
        "processes": 1,
        "threads": 1,
        "prefetch": None,
        "max_tasks": None,
        "max_tasks_jitter": 0,
        "burst": False,
        "sync_ack": False,
        "grace_period_s": 1.0,
        "task_timeout_s": None,
        "reap_interval_s": None,
    }
    return WorkerOptions(**{**options, **changes})


class WatchedBroker(Broker):
    """The real broker on the test's Redis; its idle waits are recorded instead of blocking."""

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker.settings)
        self.acquires = 0
        self.acquired: list[Acquired] = []  # every queue's reply to every acquire, in order
        self.waits_s: list[float] = []

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        self.acquires += 1
        replies = super().acquire_from(counts)
        self.acquired += replies
        return replies

    def wait_for_queues(
        self, queues: Sequence[str], worker_id: str, timeout_s: float
    ) -> frozenset[str] | None:
        self.waits_s.append(timeout_s)
        return None  # as a BLPOP that timed out


def echo_task(queue: str) -> NewTask:
    """A new echo task of ``queue``, to enqueue with ``Broker.enqueue``."""
    task_id = make_task_id(uuid.uuid4().hex, queue)
    payload = {"path": "testproject.example.tasks.echo", "args": [1], "kwargs": {}}
    return NewTask(id=task_id, payload=json.dumps(payload), priority=0, run_after_ms=None)


def idle_prefetcher(
    broker: Broker,
    queues: tuple[str, ...] = ("default",),
    *,
    burst: bool = False,
    on_empty: Callable[[], None] = lambda: None,
) -> Prefetcher:
    """A prefetcher of a process with nothing buffered, running or unwritten, filling a buffer
    of 8 sync tasks; a test runs its rounds (``_round``) itself: the thread is never started."""
    return Prefetcher(
        broker,
        "worker-a",
        queues,
        TaskBuffer(8, lambda reservation: False),
        HeldLeases(),
        burst=burst,
        is_settled=lambda: True,
        unwritten=lambda: 0,
        unwritten_chars=lambda: 0,
        on_empty=on_empty,
        on_refused=lambda error: None,
        on_crash=lambda: None,
        limited=frozenset(),
        runners=lambda: Runners(threads=8, loop=0),
    )


def unstarted_writer(broker: Broker) -> AckWriter:
    """An ack writer whose thread never runs: a test calls its loop's body (``_write``)."""
    return AckWriter(
        broker,
        "worker-a",
        HeldLeases(),
        PendingProgress(),
        on_written=lambda: None,
        on_crash=lambda: None,
    )


@contextmanager
def checked_writer(broker: Broker, worker_id: str) -> Iterator[AckWriter]:
    """An ack writer of ``broker`` for the block. After it, one the test started is stopped
    without waiting on Redis (``give_up_now``: a writer that spun ends too), and the test fails
    if its thread is still alive or its loop crashed."""
    crashes: list[str] = []
    writer = AckWriter(
        broker,
        worker_id,
        HeldLeases(),
        PendingProgress(),
        on_written=lambda: None,
        on_crash=lambda: crashes.append("crashed"),
    )
    yield writer
    if writer.ident is not None:  # started
        writer.give_up_now()
        writer.stop()
        writer.join(10)
    assert not writer.is_alive()
    assert not crashes


def role_crashed() -> None:
    """A role thread's ``on_crash``: the test fails."""
    raise AssertionError("a role thread crashed; see the captured log")


def thread_parts(
    backend: ThreadmillTaskBackend,
    reservations: Sequence[Reservation],
    *,
    worker_id: str = "worker-a",
    sync_ack: bool = False,
) -> RunnerParts:
    """The parts a real ``WorkerThread`` runs ``reservations`` with on ``backend``: a buffer
    of four, an ack writer holding their leases (not started: the test starts it), and no
    pacing; a role thread that crashes fails the test."""
    executor = Executor(worker_id, backend.alias, type(backend))
    held = HeldLeases()
    held.add([reservation.lease for reservation in reservations])
    buffer = TaskBuffer(capacity=4, is_async=lambda reservation: False)
    writer = AckWriter(
        backend.broker, worker_id, held, executor.progress, lambda: None, role_crashed
    )
    return RunnerParts(
        buffer=buffer,
        executor=executor,
        writer=writer,
        held=held,
        pacer=Pacer(backend.broker, lambda reservations: None, buffer.put_many),
        cancelled_steps=CancelledSteps(backend.broker),
        sync_ack=sync_ack,
        on_task_done=lambda: None,
    )


def run_script(script: str, redis_url: str, key_prefix: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a new Python with the test project's environment; return how it ended."""
    return run_python("-c", script, redis_url=redis_url, key_prefix=key_prefix)


def run_loop_blockers[T](
    enqueue: Callable[[], T], redis_url: str, key_prefix: str, *args: str
) -> tuple[T, str]:
    """Enqueue tasks that block the event loop and run them in a ``--burst`` worker logging at
    DEBUG; return what ``enqueue`` returned and the log. Again, with new tasks, while the loop
    monitor woke late: starved of CPU on a loaded machine, it then names no task, by design."""
    for _attempt in range(5):
        enqueued = enqueue()
        command = worker(redis_url, key_prefix, "--burst", "-v", "2", *args)
        output = run_to_completion(command, timeout_s=60)
        if MONITOR_WOKE_LATE not in output:
            return enqueued, output
    pytest.fail("the loop monitor woke late in every run: the machine was short of CPU")
