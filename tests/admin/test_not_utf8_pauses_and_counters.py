"""A pause or a counter holding bytes that are not UTF-8 never makes a page fail.

Only a hand edit writes one (``redis-cli SET ...:paused $'1 ada: \\xff'``): django-threadmill
writes pauses and counters in ASCII. A pause still shows, its reason with each such byte as its
escape (``\\xff``); a counter field whose name or value is not UTF-8 is skipped, as one that is
not a number is (docs/observability.md), and the others are counted.
"""

import html
import re

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import QueueKeys
from tests.admin.conftest import QUEUES_URL, page, successful_task
from tests.observability.test_metrics_view import samples, value

METRICS_URL = "/threadmill/metrics"
RESUME_URL = QUEUES_URL + "default/default/resume/"
PURGE_URL = QUEUES_URL + "default/default/purge/"
ADD = "testproject.example.tasks.add"


def keys(backend: ThreadmillTaskBackend) -> QueueKeys:
    return backend.broker.queue_keys("default")


def paused_by_hand(backend: ThreadmillTaskBackend, client: redis.Redis) -> None:
    """Pause queue "default" as ``redis-cli SET <key> $'1 ada: mail \\xff down'`` would."""
    client.set(keys(backend).paused, b"1 ada: mail \xff down")


@pytest.mark.parametrize("url", [QUEUES_URL, METRICS_URL])
def test_a_pause_reason_not_utf8_leaves_every_page_that_reads_pauses_answering(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, url: str
) -> None:
    paused_by_hand(backend, redis_client)

    page(operator, url)


def test_the_queues_page_shows_a_pause_reason_not_utf8_escaped(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    paused_by_hand(backend, redis_client)

    queues = html.unescape(page(operator, QUEUES_URL))

    assert r"by ada: mail \xff down. Workers take none of its tasks" in queues


def test_the_resume_confirmation_shows_a_pause_reason_not_utf8_escaped(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    paused_by_hand(backend, redis_client)

    response = operator.post(RESUME_URL)

    assert response.status_code == 200
    assert r"by ada: mail \xff down." in html.unescape(response.content.decode())


def test_a_scrape_counts_a_queue_paused_with_a_reason_not_utf8_as_paused(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    paused_by_hand(backend, redis_client)

    found = samples(page(operator, METRICS_URL))

    assert value(found, "threadmill_queue_paused", queue="default") == 1


def stats_by_hand(backend: ThreadmillTaskBackend, client: redis.Redis) -> None:
    """Give P:stats a value and a field that are not UTF-8 beside a good counter."""
    client.hset(keys(backend).stats, mapping={"successful": 7, "failed": b"\xff", b"retry\xfe": 3})


@pytest.mark.parametrize("url", [QUEUES_URL, PURGE_URL])
def test_stats_not_utf8_leave_every_page_that_reads_them_answering(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, url: str
) -> None:
    successful_task(backend)  # the purge page needs a result to purge
    stats_by_hand(backend, redis_client)

    page(operator, url)


def test_the_queues_page_skips_stats_not_utf8_and_counts_the_others(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    stats_by_hand(backend, redis_client)

    queues = page(operator, QUEUES_URL)

    assert "All time in this queue: 7 successful, 0 failed, 0 retried." in queues


def minute_by_hand(backend: ThreadmillTaskBackend, client: redis.Redis) -> None:
    """Give this minute's metric hash a value and a field that are not UTF-8 beside a good
    counter."""
    minute = backend.broker.server_time_ms() // 60_000
    client.hset(
        keys(backend).metrics_minute(minute),
        mapping={f"{ADD}|successful": 4, f"{ADD}|failed": b"\xff", b"\xfe|successful": 2},
    )


def test_a_minute_not_utf8_leaves_the_queues_page_answering_with_the_other_counters(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    minute_by_hand(backend, redis_client)

    queues = page(operator, QUEUES_URL)

    chart = re.search(
        r'<figure class="tm-chart-box" id="tm-chart-default">.*?</figure>', queues, re.S
    )
    assert chart is not None
    assert "4 successful, 0 failed" in chart[0]


def test_lifetime_metrics_not_utf8_leave_the_scrape_answering_with_the_other_counters(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    redis_client.hset(
        keys(backend).metrics,
        mapping={f"{ADD}|successful": 5, f"{ADD}|failed": b"\xff", b"\xfe|successful": 2},
    )

    found = samples(page(operator, METRICS_URL))

    task = {"queue": "default", "task": ADD}
    assert value(found, "threadmill_tasks_finished_total", outcome="successful", **task) == 5
    assert value(found, "threadmill_tasks_finished_total", outcome="failed", **task) == 0


@pytest.mark.parametrize("url", [QUEUES_URL, METRICS_URL])
@pytest.mark.parametrize("counts", ["held", "threads"])
def test_worker_counts_not_utf8_read_as_unknown_on_every_page_that_reads_them(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    url: str,
    counts: str,
) -> None:
    now_ms = backend.broker.server_time_ms()
    redis_client.zadd(keys(backend).workers, {"host:1:w": now_ms})
    redis_client.hset(getattr(keys(backend), counts), "host:1:w", b"\xff")

    page(operator, url)


@pytest.mark.parametrize("tasks_options", [{"queue_limits": {"default": {"rate": "600/m"}}}])
@pytest.mark.parametrize("key", ["rate", "paced"])
def test_a_rate_limit_time_not_utf8_reads_as_now_on_the_queues_page(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, key: str
) -> None:
    redis_client.set(getattr(keys(backend), key), b"\xff")

    assert "<td>600/m, next start now</td>" in page(operator, QUEUES_URL)
