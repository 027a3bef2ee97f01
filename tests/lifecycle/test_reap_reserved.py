"""An expired reservation (prefetched, never started) goes back to READY in its place."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once

from .support import reserve, wait_for_expiry
from .tasks import plain


def test_expired_reservations_are_ready_again_in_priority_and_fifo_order(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    low = [plain.using(priority=-5).enqueue().id for _ in range(2)]
    high = [plain.using(priority=5).enqueue().id for _ in range(2)]
    assert len(reserve(broker)) == 4
    wait_for_expiry(broker, redis_client)

    report = reap_once(backend)

    assert report.released == 4
    assert (report.failed, report.retried, report.stale) == (0, 0, 0)
    for task_id in low + high:
        result = backend.get_result(task_id)
        assert result.status == TaskResultStatus.READY
        assert result.errors == []
        assert result.worker_ids == []
    assert [r.lease.task_id for r in reserve(broker)] == high + low


LEFTOVERS = {
    "ghost": lambda client, key: client.delete(key),  # a lease whose record is gone
    "damaged": lambda client, key: client.set(key, "garbage"),  # set aside, unreadable
}


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_a_ghost_or_damaged_lease_in_a_batch_does_not_end_the_pass(
    leftover: str, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """reap.lua drops such a lease without releasing it: counted by what it released, the batch
    looked short and the pass ended, leaving the reservations behind it a lease_ttl longer."""
    ids = [plain.enqueue().id for _ in range(5)]
    assert len(reserve(broker)) == 5
    keys = broker.queue_keys("default")
    leftover_id = f"{'0' * 32}@default"
    LEFTOVERS[leftover](redis_client, keys.record(leftover_id))
    redis_client.zadd(keys.leases, {leftover_id: 0})  # first in the first batch
    wait_for_expiry(broker, redis_client)

    report = reap_once(backend, batch_size=2)

    assert report.released == 5
    assert redis_client.zcard(keys.leases) == 0
    assert {backend.get_result(task_id).status for task_id in ids} == {TaskResultStatus.READY}
