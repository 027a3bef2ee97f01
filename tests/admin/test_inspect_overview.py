"""Inspector.overview and workers: the counts and workers the queues page shows."""

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Index, Inspector
from testproject.example.tasks import add
from tests.backend_support import fail, reserve, start, succeed


def test_counts_every_state_of_a_queue(backend: ThreadmillTaskBackend) -> None:
    inspector = Inspector(backend.broker)
    running = add.enqueue(1, 1)
    start(backend, running.id)
    reserved = add.enqueue(1, 2)
    reserve(backend, reserved.id)
    ok, bad = add.enqueue(1, 3), add.enqueue(1, 4)
    succeed(backend, ok.id, 4)
    fail(backend, bad.id, ValueError("no"))
    add.enqueue(2, 2)
    add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(3, 3)

    [overview] = inspector.overview(["default"])

    assert (overview.ready, overview.delayed) == (1, 1)
    assert overview.leased.counts == {"reserved": 1, "running": 1}
    assert overview.finished == 2
    assert overview.outcomes.counts == {"successful": 1, "failed": 1}
    assert overview.outcomes.exact
    assert overview.finished_since == {1: 2, 5: 2, 15: 2}
    assert overview.lifetime == {"successful": 1, "failed": 1}


def test_oldest_ready_looks_at_the_head_of_every_priority_band(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    inspector = Inspector(backend.broker)
    old_low = add.using(priority=-5).enqueue(1, 1)
    add.using(priority=50).enqueue(1, 2)
    add.enqueue(1, 3)
    record = backend.broker.queue_keys("default").record(old_low.id)
    redis_client.hset(record, "enqueued_ms", 1_000)

    assert inspector.oldest_ready_times(["default"])["default"] == 1_000


def test_oldest_ready_of_an_empty_queue_is_none(backend: ThreadmillTaskBackend) -> None:
    assert Inspector(backend.broker).oldest_ready_times(["default"])["default"] is None


def test_split_above_the_sample_is_estimated(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_threadmill.broker.inspect.queues.STATE_SAMPLE", 2)
    for n in range(4):
        succeed(backend, add.enqueue(n, n).id, n)

    split = Inspector(backend.broker).state_splits(["default"], Index.DONE)["default"]

    assert split.counts == {"successful": 4}
    assert not split.exact


def test_workers_come_from_lease_renewals(backend: ThreadmillTaskBackend) -> None:
    lease = start(backend, add.enqueue(1, 1).id)
    assert backend.broker.renew("web1:4242:ab12", [lease], threads=6) == []

    [sighting] = Inspector(backend.broker).workers(["default", "emails"])

    assert (sighting.worker_id, sighting.queue, sighting.held) == ("web1:4242:ab12", "default", 1)
    assert sighting.threads == 6
    assert sighting.last_renewal_ms > 0
