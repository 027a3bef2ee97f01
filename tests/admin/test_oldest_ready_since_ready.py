"""Oldest READY (the queues page, threadmill_oldest_ready_seconds) counts from when a task
became ready: a task retried or requeued long after its enqueue is not an old wait; a task
that has really waited long is, whatever waits before it in its priority band."""

import re

import pytest
import redis
from django.test import Client

from django_threadmill.aliases import sources
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.broker.inspect import Inspector
from django_threadmill.codec.results import error_json
from django_threadmill.observability.prometheus import exposition
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, page
from tests.backend_support import fail, finish, reserve, start
from tests.observability.test_metrics_view import samples, value

HOUR_MS = 3_600_000


@pytest.fixture
def inspector(backend: ThreadmillTaskBackend) -> Inspector:
    return Inspector(backend.broker)


def write(backend: ThreadmillTaskBackend, client: redis.Redis, task_id: str, **fields: int) -> None:
    """Write record fields by hand: times of the test's choosing."""
    client.hset(backend.broker.queue_keys("default").record(task_id), mapping=fields)


def oldest(inspector: Inspector) -> int | None:
    [overview] = inspector.overview(["default"])
    return overview.oldest_ready_since_ms


def retried_an_hour_after_enqueue(
    backend: ThreadmillTaskBackend, client: redis.Redis, inspector: Inspector
) -> int:
    """Enqueue a task an hour ago, retry it now (no delay) and promote it to ready, as a
    worker's acquire does, without reserving it; return the Redis time before the retry."""
    task_id = add.enqueue(1, 1).id
    write(backend, client, task_id, enqueued_ms=inspector.now_ms() - HOUR_MS)
    lease = start(backend, task_id)
    before_retry = inspector.now_ms()
    finish(backend, lease, Outcome.RETRY, error_json(ValueError("flaky")))
    assert backend.broker.acquire("default", 0).reservations == []  # a peek: promotes only
    return before_retry


def test_a_task_retried_an_hour_after_its_enqueue_waits_from_its_due_time(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, inspector: Inspector
) -> None:
    before_retry = retried_an_hour_after_enqueue(backend, redis_client, inspector)

    assert (since := oldest(inspector)) is not None
    assert since >= before_retry


def test_a_task_requeued_an_hour_after_its_enqueue_waits_from_the_requeue(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, inspector: Inspector
) -> None:
    task_id = add.enqueue(1, 1).id
    write(backend, redis_client, task_id, enqueued_ms=inspector.now_ms() - HOUR_MS)
    fail(backend, task_id, ValueError("no"))
    before_requeue = inspector.now_ms()
    assert backend.requeue(task_id)

    assert (since := oldest(inspector)) is not None
    assert since >= before_requeue


def test_a_task_waits_from_its_run_after_when_later_than_its_enqueue(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, inspector: Inspector
) -> None:
    task_id = add.enqueue(1, 1).id
    now = inspector.now_ms()
    write(backend, redis_client, task_id, enqueued_ms=now - HOUR_MS, run_after_ms=now - 60_000)

    assert oldest(inspector) == now - 60_000


def test_a_released_reservation_keeps_its_wait(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, inspector: Inspector
) -> None:
    """A reservation handed back (shutdown) was ready all along: its wait does not restart."""
    task_id = add.enqueue(1, 1).id
    enqueued = inspector.now_ms() - HOUR_MS
    write(backend, redis_client, task_id, enqueued_ms=enqueued)
    assert backend.broker.release([reserve(backend, task_id)]) == 1

    assert oldest(inspector) == enqueued


def test_a_task_waiting_behind_a_requeued_head_shows_its_real_age(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, inspector: Inspector
) -> None:
    """The requeued head of the band became ready now; the task behind it has waited an hour."""
    head, behind = add.enqueue(1, 1).id, add.enqueue(2, 2).id
    now = inspector.now_ms()
    write(backend, redis_client, head, enqueued_ms=now - 2 * HOUR_MS)
    write(backend, redis_client, behind, enqueued_ms=now - HOUR_MS)
    fail(backend, head, ValueError("no"))
    assert backend.requeue(head)

    assert oldest(inspector) == now - HOUR_MS


def test_each_band_is_read_from_its_head_and_a_long_band_errs_older(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    inspector: Inspector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past BAND_SAMPLE ids in a band, the unread ones count from the last id read's enqueue:
    none of them became ready before it, so the figure is older than the truth, never younger."""
    monkeypatch.setattr("django_threadmill.broker.inspect.ready_walk.BAND_SAMPLE", 2)
    now = inspector.now_ms()
    high = add.using(priority=10).enqueue(0, 0).id
    band = [add.enqueue(n, n).id for n in range(3)]
    write(backend, redis_client, high, enqueued_ms=1_000, ready_ms=now)
    for n, task_id in enumerate(band[:2]):
        write(backend, redis_client, task_id, enqueued_ms=2_000 + n, ready_ms=now)
    write(backend, redis_client, band[2], enqueued_ms=5_000)

    assert oldest(inspector) == 2_001  # the last one read of the priority-0 band

    monkeypatch.setattr("django_threadmill.broker.inspect.ready_walk.BAND_SAMPLE", 100)
    assert oldest(inspector) == 5_000


def test_the_gauge_and_the_queues_page_count_from_a_retry(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    inspector: Inspector,
    operator: Client,
) -> None:
    retried_an_hour_after_enqueue(backend, redis_client, inspector)

    found = samples(exposition(sources()).decode())
    assert value(found, "threadmill_oldest_ready_seconds", queue="default") < HOUR_MS / 1000
    shown = re.search(r'<span title="ready since [^"]+">([^<]+)</span>', page(operator, QUEUES_URL))
    assert shown is not None
    assert " h " not in shown[1]  # an hour enqueued, seconds ready: "1 h 0 min" before
