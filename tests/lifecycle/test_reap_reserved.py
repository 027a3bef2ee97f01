"""An expired reservation (prefetched, never started) goes back to READY in its place."""

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
