"""Reserved tasks a worker has not started hold their payloads by size too, not only by count
(docs/worker.md, Memory a process keeps).

Read-ahead was bounded in tasks alone: a process of four threads with ``--prefetch 200``
reserved 200 tasks of 1 MiB payloads and held 395 MiB resident, their payloads waiting behind
four running tasks; at ``--prefetch 10000`` (or a pool grown to 2,500 threads, or 500 async
tasks beside it) the bound was gigabytes, and one acquire call built that reply in Redis too.

The worker runs as the real ``threadmill_worker`` command; its task is at module level so the
worker process imports it.
"""

import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Reservation, acquisition
from django_threadmill.broker.acquisition import ACQUIRE_CHARS
from django_threadmill.compat import task
from django_threadmill.worker.backpressure import READAHEAD_CHARS_CAP
from django_threadmill.worker.buffer import TaskBuffer, chars_of
from django_threadmill.worker.memory import MIB
from tests.support import Command, wait_until

PAYLOAD_CHARS = MIB  # about: the default max_payload_bytes, less room for the path and keys
TASKS = 200
HELD = "Reserving nothing until tasks waiting are taken"


@task
def hold(path: str, ballast: str) -> int:
    """Wait until ``path`` exists; ``ballast`` makes the payload large."""
    while not Path(path).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    return len(ballast)


def ballast() -> str:
    return "x" * (PAYLOAD_CHARS - 1000)


def test_a_worker_reserves_large_payloads_by_their_size(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    release = tmp_path / "release"
    ids = [hold.enqueue(str(release), ballast()).id for _ in range(TASKS)]

    def taken() -> int:
        """Count the tasks the worker reserved or runs (a record no longer READY)."""
        records = [backend.broker.record(task_id) for task_id in ids]
        return sum(record is not None and record["state"] != "ready" for record in records)

    command = start_worker(
        "--queue", "default", "--threads", "4", "--prefetch", str(TASKS), "-v", "2"
    )
    # The threads hold their tasks until the release: nothing is taken from the buffer after
    # the hold begins, so what is reserved then is all that ever is.
    wait_until(lambda: HELD in command.log or taken() == TASKS, "a hold, or every task taken")
    most = (READAHEAD_CHARS_CAP + ACQUIRE_CHARS) // PAYLOAD_CHARS + 1 + 4  # and the running
    assert taken() <= most, f"{taken()} of {TASKS} tasks reserved or run, at most {most}"
    [pid] = command.child_pids()
    resident = psutil.Process(pid).memory_info().rss
    assert resident < TASKS * PAYLOAD_CHARS, f"RSS {resident / MIB:.0f} MiB"

    release.touch()
    wait_until(lambda: all(backend.get_result(i).status == "SUCCESSFUL" for i in ids), "all ran")


def test_one_acquire_replies_with_its_chars_and_leaves_the_rest_ready_in_order(
    broker: Broker, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acquisition, "ACQUIRE_CHARS", 5000)
    ids = [hold.enqueue("never", "x" * 1000).id for _ in range(12)]
    ready = broker.queue_keys("default").ready

    first = broker.acquire("default", 12).reservations

    assert [r.lease.task_id for r in first] == ids[:4]  # 1,100 characters each, or about
    assert sum(map(chars_of, first)) <= 5000
    assert redis_client.zrange(ready, 0, -1) == ids[4:]  # back in place, in order
    second = broker.acquire("default", 12).reservations
    assert [r.lease.task_id for r in second] == ids[4:8]


def test_a_task_larger_than_the_bound_is_still_reserved(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first task of a call is reserved whatever its size, or it would never run."""
    monkeypatch.setattr(acquisition, "ACQUIRE_CHARS", 5000)
    task_id = hold.enqueue("never", "x" * 6000).id
    hold.enqueue("never", "small")

    [reserved] = broker.acquire("default", 2).reservations

    assert reserved.lease.task_id == task_id


def test_the_buffer_counts_the_chars_of_the_tasks_waiting(broker: Broker) -> None:
    for _ in range(3):
        hold.enqueue("never", "x" * 1000)
    reservations = broker.acquire("default", 3).reservations
    assert len(reservations) == 3
    buffer = TaskBuffer(8, is_async=lambda reservation: False)

    buffer.put_many(reservations)
    assert buffer.waiting_chars() == sum(map(chars_of, reservations))
    taken = buffer.take()
    assert isinstance(taken, Reservation)
    assert buffer.waiting_chars() == sum(map(chars_of, reservations)) - chars_of(taken)
    buffer.close()
    assert buffer.waiting_chars() == 0
