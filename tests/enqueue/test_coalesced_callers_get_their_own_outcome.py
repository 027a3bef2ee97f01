"""A coalesced enqueue gets its own task's outcome, not the batch's; a forked child's first
enqueue does not wait for a parent thread that was making its backend's pipeline.

Concurrent enqueues share one round trip: on a sharded queue, one script call per shard. When
one shard refuses its call, the callers whose task went there must get that shard's error,
which says their task was not stored, as the same enqueue made alone would: not the
``PartlyEnqueued`` of the whole batch ("N of the M tasks ... were written ... retry only the
others"), which speaks of other callers' tasks, and whose ``.written`` a caller cannot check
since it has no id of its own to look for.
"""

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResult, task_backends
from django_threadmill.enqueue import pipeline as pipeline_module
from django_threadmill.exceptions import BrokerUnavailable, PartlyEnqueued
from testproject.example.tasks import echo
from tests.enqueue.test_fork_and_lost_replies import exit_code_of, in_child
from tests.support import wait_until
from tests.unique.tasks import refresh

SHARDS = 4
# Unique tasks land in the shard of their digest: the same shards on every run, and these
# accounts fill every shard (tests/enqueue/test_partly_enqueued.py).
ACCOUNTS = range(1, 32)

type Outcome = TaskResult | BaseException


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}, "max_connections": 1}


@dataclass(frozen=True)
class Broken:
    shard: int  # the shard whose ready index holds a value of another type
    first: TaskResult  # stored before it broke


@pytest.fixture
def broken(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> Broken:
    """Register the queue, then give one shard's ready index a value of another type, so
    that shard's enqueue call is refused and stores nothing."""
    first = refresh.enqueue(0)
    shard = (shard_of(first.id, SHARDS) + 1) % SHARDS
    ready = backend.broker.queue_keys(backend.broker.parts("default")[shard]).ready
    redis_client.set(ready, "not a zset")
    return Broken(shard, first)


def check_outcomes(
    outcomes: list[Outcome],
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    broken: Broken,
) -> None:
    returned = [o for o in outcomes if isinstance(o, TaskResult)]
    failed = [o for o in outcomes if not isinstance(o, TaskResult)]
    assert returned, "the calls of the other shards"
    assert failed, "the calls of the broken shard"
    for error in failed:
        # The shard's own error, as one enqueue alone gets it: its task was not stored.
        assert type(error) is BrokerUnavailable, repr(error)
        assert "holds a value of the wrong kind" in str(error)
        assert "tasks for sharded queue" not in str(error)
    # What returned is stored, and nothing else was.
    parts = backend.broker.parts("default")
    stored = {
        task_id
        for shard, part in enumerate(parts)
        if shard != broken.shard
        for task_id in redis_client.zrange(backend.broker.queue_keys(part).ready, 0, -1)
    }
    assert stored == {broken.first.id} | {r.id for r in returned}


def test_an_event_loops_burst(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, broken: Broken
) -> None:
    async def burst() -> list[Outcome]:
        calls = (refresh.aenqueue(account) for account in ACCOUNTS)
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst())
    check_outcomes(outcomes, backend, redis_client, broken)


def test_threads_that_share_a_round_trip(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, broken: Broken
) -> None:
    pool = backend.broker.client.connection_pool
    held = pool.get_connection()  # the first caller waits for it; the others line up behind
    line = backend.pipeline.enqueuer._threads._line  # no public view of the line

    def enqueue(account: int) -> Callable[[], Outcome]:
        def call() -> Outcome:
            try:
                return refresh.enqueue(account)
            except BrokerUnavailable as exc:
                return exc

        return call

    with ThreadPoolExecutor(len(ACCOUNTS), thread_name_prefix="test-coalesce") as threads:
        futures = [threads.submit(enqueue(account)) for account in ACCOUNTS]
        wait_until(lambda: len(line._waiting) == len(ACCOUNTS) - 1, "callers behind the first")
        pool.release(held)
        outcomes = [future.result() for future in futures]
    check_outcomes(outcomes, backend, redis_client, broken)
    assert not any(isinstance(o, PartlyEnqueued) for o in outcomes)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_child_forked_while_a_thread_makes_its_backends_pipeline_enqueues(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first enqueue of a thread makes its backend find the process's pipeline, under a
    lock; a child forked meanwhile did not get that thread, and must not wait for its lock."""
    making, release = threading.Event(), threading.Event()
    parent = os.getpid()
    make = pipeline_module.EnqueuePipeline

    def slow_make(*args: Any) -> Any:
        if os.getpid() == parent and not release.is_set():
            making.set()
            release.wait()
        return make(*args)

    monkeypatch.setattr(pipeline_module, "EnqueuePipeline", slow_make)
    with ThreadPoolExecutor(1, thread_name_prefix="test-fork") as threads:
        first = threads.submit(lambda: task_backends["default"].pipeline)
        assert making.wait(10)  # that thread holds the lock of the process's pipelines
        pid = in_child(lambda: echo.get_result(echo.enqueue("child").id).args == ["child"])
        code = exit_code_of(pid)
        release.set()
        first.result(10)
    assert code == 0
