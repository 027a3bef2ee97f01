"""A call to a sharded queue that fails in some shards sends task_enqueued for what it wrote.

The tasks of the shards that wrote are in Redis and will run; a receiver that counts or logs
every enqueued task (docs/enqueue.md, Bulk enqueue) once heard nothing of them, since the call
raised ``PartlyEnqueued`` before any signal was sent.
"""

import asyncio
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResult, task_enqueued
from django_threadmill.exceptions import PartlyEnqueued
from tests.unique.tasks import refresh

SHARDS = 4
ACCOUNTS = 32  # unique tasks land in the shard of their digest: the same shards on every run


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}}


@pytest.fixture
def duplicate_and_broken_shard(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> TaskResult:
    """Store account 0's unique task, then break a shard other than its own; return it."""
    first = refresh.enqueue(0)
    broken = (shard_of(first.id, SHARDS) + 1) % SHARDS
    ready = backend.broker.queue_keys(backend.broker.parts("default")[broken]).ready
    redis_client.set(ready, "not a zset")
    return first


def test_the_written_tasks_are_announced_and_the_others_and_duplicates_are_not(
    backend: ThreadmillTaskBackend,
    duplicate_and_broken_shard: TaskResult,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    enqueued.clear()  # the first task's own signal
    with pytest.raises(PartlyEnqueued) as raised:
        backend.enqueue_many(refresh, [((account,), {}) for account in range(ACCOUNTS)])
    error = raised.value
    assert error.existing  # account 0: a duplicate in a shard that wrote, so nothing stored
    stored = error.written - error.existing.keys()
    assert stored  # some shards wrote
    assert len(error.written) < ACCOUNTS  # one did not
    assert sorted(result.id for _, result in enqueued) == sorted(stored)
    assert {sender for sender, _ in enqueued} == {ThreadmillTaskBackend}
    assert all(backend.get_result(result.id).args == result.args for _, result in enqueued)


def test_a_failing_receiver_does_not_hide_the_partial_failure(
    backend: ThreadmillTaskBackend,
    duplicate_and_broken_shard: TaskResult,
    enqueued: list[tuple[type, TaskResult]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The caller must learn which ids to retry: a receiver's error is logged, and every
    written task is still announced to the other receivers."""
    enqueued.clear()

    def failing(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        raise RuntimeError("metrics down")

    task_enqueued.connect(failing)
    try:
        with pytest.raises(PartlyEnqueued) as raised:
            backend.enqueue_many(refresh, [((account,), {}) for account in range(ACCOUNTS)])
    finally:
        task_enqueued.disconnect(failing)
    error = raised.value
    stored = error.written - error.existing.keys()
    assert sorted(result.id for _, result in enqueued) == sorted(stored)
    failures = [r for r in caplog.records if r.getMessage().startswith("Signal receiver failed")]
    assert len(failures) == len(stored)


def test_a_coalesced_burst_announces_the_tasks_of_the_callers_it_returns_to(
    backend: ThreadmillTaskBackend,
    duplicate_and_broken_shard: TaskResult,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    """One event loop's burst is one call per shard: the callers whose shard wrote get their
    result and their signal; those of the broken shard get its error, and no signal."""
    enqueued.clear()

    async def burst() -> list[TaskResult | BaseException]:
        calls = (refresh.aenqueue(account) for account in range(1, ACCOUNTS))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(burst())
    returned = [o.id for o in outcomes if isinstance(o, TaskResult)]
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert returned
    assert failed
    assert all("wrong kind" in str(error) for error in failed)
    assert sorted(result.id for _, result in enqueued) == sorted(returned)
