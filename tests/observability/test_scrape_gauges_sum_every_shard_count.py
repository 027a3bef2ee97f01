"""A queue's gauges count what waits and runs under every shard count it was used with
(docs/observability.md, Families; docs/scaling.md, Changing the shard count).

The gauges read only the parts of the count the settings give: after a change of
``queue_shards``, the tasks still waiting under the old count vanished from
``threadmill_queue_tasks`` and ``threadmill_oldest_ready_seconds`` (an alert on queue depth or
age went quiet while work was stuck), and the workers serving the old count from
``threadmill_workers``, while the counters summed every count.
"""

from datetime import timedelta

import redis
from django.utils import timezone

from django_threadmill.broker import Start
from django_threadmill.codec.times import now_ms
from testproject.example.tasks import add
from tests.observability.test_metrics_view import scrape, value
from tests.observability.test_scrape_keeps_counters_across_shard_counts import sharded
from tests.support import command_calls

SERVING = "web-7.example.com:4242:ab12"  # a worker of the earlier count
HOUR_MS = 3_600_000


def test_the_gauges_count_the_earlier_counts_tasks_and_workers(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    with sharded(redis_url, key_prefix, 3) as backend:
        waiting = [add.enqueue(n, n).id for n in range(4)]
        add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(9, 9)
        # One task a call, its shard in turn: three calls ask every shard once.
        lease = next(
            found.lease
            for _ in range(3)
            for found in backend.broker.acquire("default", 1).reservations
        )
        assert backend.broker.start(SERVING, [Start(lease=lease, started_ms=now_ms())]) == []
        backend.broker.renew(SERVING, [lease], threads=12)
        oldest = next(task_id for task_id in waiting if task_id != lease.task_id)
        record = backend.broker.record_key(oldest)
        assert record is not None
        redis_client.hset(record, "enqueued_ms", backend.broker.server_time_ms() - HOUR_MS)

    with sharded(redis_url, key_prefix, 1):
        add.enqueue(1, 1)
        before = command_calls(redis_client)
        found = scrape()
        layouts_read = command_calls(redis_client)["smembers"] - before["smembers"]

    queue = {"queue": "default"}
    assert value(found, "threadmill_queue_tasks", state="ready", **queue) == 4
    assert value(found, "threadmill_queue_tasks", state="delayed", **queue) == 1
    assert value(found, "threadmill_queue_tasks", state="running", **queue) == 1
    assert value(found, "threadmill_oldest_ready_seconds", **queue) >= HOUR_MS / 1000
    assert value(found, "threadmill_workers") == 1
    assert value(found, "threadmill_worker_threads") == 12
    assert layouts_read <= 2  # the queues set, and the layouts set once per scrape
