"""A ready id scored outside the priority bands enqueue writes (±inf, negative, past the last
band: only by hand) is read for Oldest READY like any other, and the walk over the bands
neither fails on it nor steps on the spot (docs/admin.md, Queues)."""

import re

import pytest
import redis
from django.test import Client

from django_threadmill.aliases import sources
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.observability.prometheus import exposition
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, page
from tests.observability.test_metrics_view import samples, value
from tests.support import command_calls

HOUR_MS = 3_600_000


def score_by_hand(
    backend: ThreadmillTaskBackend, client: redis.Redis, score: float, enqueued_ms: int
) -> None:
    """Enqueue a task, then score it in the ready set and date its enqueue by hand."""
    task_id = add.enqueue(1, 1).id
    keys = backend.broker.queue_keys("default")
    client.zadd(keys.ready, {task_id: score})
    client.hset(keys.record(task_id), "enqueued_ms", enqueued_ms)


def test_infinite_ready_scores_are_read_on_the_queues_page_and_the_gauge(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, operator: Client
) -> None:
    """int(inf) raised OverflowError: the queues page and the metrics failed with a 500."""
    now = Inspector(backend.broker).now_ms()
    add.enqueue(1, 1)
    score_by_hand(backend, redis_client, float("inf"), now - HOUR_MS)
    score_by_hand(backend, redis_client, float("-inf"), now - 60_000)

    shown = re.search(r'<span title="ready since [^"]+">([^<]+)</span>', page(operator, QUEUES_URL))

    assert shown is not None
    assert shown[1].startswith("1 h ")
    found = samples(exposition(sources()).decode())
    assert value(found, "threadmill_oldest_ready_seconds", queue="default") >= HOUR_MS / 1000


@pytest.mark.parametrize("far", [float("inf"), 1e300], ids=["infinite", "finite"])
def test_many_ids_scored_outside_the_bands_read_one_sample_each_and_end_the_walk(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    far: float,
) -> None:
    """More ids at one far score than a band's sample: stepping one band past -1e300 left
    the score where it was, so the walk read the same ids again, band after band."""
    monkeypatch.setattr("django_threadmill.broker.inspect.ready_walk.BAND_SAMPLE", 2)
    inspector = Inspector(backend.broker)
    now = inspector.now_ms()
    add.enqueue(1, 1)
    for score in (far, -far) * 3:
        score_by_hand(backend, redis_client, score, now - HOUR_MS)
    redis_client.config_resetstat()

    assert inspector.oldest_ready_times(["default"])["default"] == now - HOUR_MS
    # One read of the ids scored below the bands, one of the bands (the one task in them).
    assert command_calls(redis_client).get("zrangebyscore") == 2
