"""A queue's per-minute metric hash holding another type leaves that queue out of the queues
page's last hour, with a note on the page and a WARNING naming the key; the other queues are
charted (docs/admin.md, the queues page).

Such a key (``SET <prefix>:{default:reports}:metrics:<minute> x``, from a program sharing the
database and key prefix) failed the one pipeline that reads every queue's minutes: the whole
backend's block of the queues page (every queue's counts, the workers, the damaged records, the
charts) became one error ("a value of the wrong kind in one of this backend's keys"). On a
sharded queue, one shard's minute leaves the queue out whole, as the scrape leaves its counters
out: charted without that shard, its last hour would read short.
"""

import logging

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import QUEUES_URL, page
from tests.admin.test_activity import ADD
from tests.admin.test_counts_and_charts import chart, queue_row
from tests.observability.test_a_metric_hash_of_another_type_leaves_its_queues_counters_out_naming_it import (  # noqa: E501
    COUNTERS,
    skipped,
)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"emails": 2}}


@pytest.fixture
def minute(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> int:
    """Return the Redis minute before this one, with 4 successes of ADD counted in "default"
    and 2 in each shard of "emails": well inside the page's hour, whenever it is read."""
    broker = backend.broker
    counted = broker.server_time_ms() // 60_000 - 1
    redis_client.hset(broker.queue_keys("default").metrics_minute(counted), f"{ADD}|successful", 4)
    for part in broker.parts("emails"):
        key = broker.queue_keys(part).metrics_minute(counted)
        redis_client.hset(key, f"{ADD}|successful", 2)
    return counted


def overwritten(redis_client: redis.Redis, key: str) -> None:
    """Replace ``key`` with a string, as a program sharing the key prefix might."""
    redis_client.delete(key)
    redis_client.set(key, "written by another program")


def left_out_note(html: str) -> list[str]:
    """Return the notes of the last hour saying a queue was left out."""
    return [line.strip() for line in html.splitlines() if "tm-activity-left-out" in line]


def test_a_queue_whose_minute_hash_holds_another_type_is_left_out_of_the_last_hour_alone(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    minute: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = backend.broker.queue_keys("reports").metrics_minute(minute - 30)
    overwritten(redis_client, key)
    caplog.set_level(logging.WARNING, COUNTERS)

    html = page(operator, QUEUES_URL)

    assert "wrong kind" not in html
    assert queue_row(html, "reports")[:2] == ["0", "0"]  # the block is shown, not an error
    assert "4 successful, 0 failed" in chart(html, "default")
    assert "4 successful, 0 failed" in chart(html, "emails")
    assert 'id="tm-chart-reports"' not in html
    assert left_out_note(html) == [
        '<p class="errornote tm-activity-left-out">The last hour of reports is left out: its '
        f"key {key} holds another type (delete it, or give each project its own "
        "OPTIONS[&#x27;key_prefix&#x27;]).</p>"
    ]
    [said] = skipped(caplog, "reports", key)
    assert said.startswith(
        "Metric counters skipped, their key holds another type (delete it, or give each "
        "project its own OPTIONS['key_prefix'])"
    )


def test_one_shard_whose_minute_hash_holds_another_type_leaves_its_queue_out_whole(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    minute: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = backend.broker.queue_keys(backend.broker.parts("emails")[1]).metrics_minute(minute)
    overwritten(redis_client, key)
    caplog.set_level(logging.WARNING, COUNTERS)

    html = page(operator, QUEUES_URL)

    assert "wrong kind" not in html
    assert "4 successful, 0 failed" in chart(html, "default")
    assert 'id="tm-chart-emails"' not in html  # not emails at 2 of its 4
    assert "0 successful, 0 failed" in chart(html, "reports")
    assert len(left_out_note(html)) == 1
    assert f"The last hour of emails is left out: its key {key} holds" in html
    assert len(skipped(caplog, "emails", key)) == 1
