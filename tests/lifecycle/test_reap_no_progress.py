"""A reap pass whose batch moved nothing ends instead of asking for the same batch again.

The reaper repeats a full batch, since more expired leases may wait behind it. A batch of
running attempts that each came back stale from finish.lua left every lease in place, and the
pass asked for the same batch forever: ``threadmill_reap --once`` never ended, and the
supervisor, which reaps in its main loop, spawned no worker and ignored SIGTERM
(docs/lifecycle.md, When a worker dies: leases and the reaper).
"""

from collections.abc import Sequence

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Reaped
from django_threadmill.broker.keys import shard_of
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reaper import reap_once

from .support import run, wait_for_expiry
from .tasks import plain

SHARDS = 2
MOST_CALLS = 5  # reap calls one pass may make here before it counts as looping


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0, "queue_shards": {"default": SHARDS}}


def move_to_the_other_shard(broker: Broker, redis_client: redis.Redis, task_id: str) -> None:
    """Move a running task's record and lease to the shard its id does not name: the reap of
    that shard reports it, and its settlement goes to the id's shard, which has no record, so
    it comes back stale on every pass. reap.lua cannot tell it from a good one."""
    parts = broker.parts("default")
    here = shard_of(task_id, SHARDS)
    own, other = broker.queue_keys(parts[here]), broker.queue_keys(parts[1 - here])
    redis_client.rename(own.record(task_id), other.record(task_id))
    deadline = redis_client.zscore(own.leases, task_id)
    redis_client.zrem(own.leases, task_id)
    redis_client.zadd(other.leases, {task_id: deadline})


def test_a_batch_of_attempts_left_unsettled_ends_the_pass(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = [plain.enqueue().id for _ in range(4)]
    run(broker)
    for task_id in ids:
        move_to_the_other_shard(broker, redis_client, task_id)
    for part in broker.parts("default"):
        if redis_client.zcard(broker.queue_keys(part).leases):
            wait_for_expiry(broker, redis_client, part)
    calls: list[str] = []
    reap_each = broker.reap_each

    def counted(
        queues: Sequence[str], limit: int, *, dry_run: bool = False
    ) -> list[Reaped | BrokerUnavailable]:
        calls.extend(queues)
        for queue in queues:
            assert calls.count(queue) <= MOST_CALLS, f"the pass asks {queue} for one batch forever"
        return reap_each(queues, limit, dry_run=dry_run)

    monkeypatch.setattr(broker, "reap_each", counted)

    report = reap_once(backend, batch_size=len(ids))  # the batch comes back full

    assert calls.count("default") == 1
    assert (report.stale, report.failed, report.released) == (len(ids), 0, 0)
    leased = {
        task_id
        for part in broker.parts("default")
        for task_id in redis_client.zrange(broker.queue_keys(part).leases, 0, -1)
    }
    assert leased == set(ids)  # left for an operator to see, not dropped
