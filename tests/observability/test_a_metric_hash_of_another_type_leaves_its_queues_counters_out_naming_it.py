"""A queue's metric hash holding another type leaves that queue's counters out of the scrape,
with a WARNING naming the key; the other queues' counters, and every queue's gauges, are
exported (docs/observability.md, Metrics and the done index).

Such a key (``SET <prefix>:{default:reports}:metrics x``, from a program sharing the database
and key prefix) failed the scrape of the whole backend: ``threadmill_backend_up`` 0 and, with no
other backend, a 503, every queue's series gone and the alerts on them silent, with a message
naming no key ("a value of the wrong kind in one of this backend's keys"). On a sharded queue,
one shard's hash leaves the queue's counters out whole: summed without that shard they would
fall, which Prometheus reads as a reset.
"""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.observability.test_metrics_view import ADD, TOKEN, scrape, value

FINISHED = "threadmill_tasks_finished_total"
COUNTERS = "django_threadmill.broker.inspect.counters"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN, "queue_shards": {"emails": 2}}


@pytest.fixture
def counted(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> None:
    """Four successes of ADD in "default", and two in each of the two shards of "emails"."""
    broker = backend.broker
    redis_client.hset(broker.queue_keys("default").metrics, f"{ADD}|successful", 4)
    for part in broker.parts("emails"):
        redis_client.hset(broker.queue_keys(part).metrics, f"{ADD}|successful", 2)


def queues_counted(found: dict) -> set[str]:
    """Return the queues ``found`` exports a finished counter of."""
    return {dict(labels)["queue"] for name, labels in found if name == FINISHED}


def skipped(caplog: pytest.LogCaptureFixture, queue: str, key: str) -> list[str]:
    """Return the WARNINGs saying ``queue``'s counters were left out for ``key``."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == COUNTERS
        and record.levelno == logging.WARNING
        and f"queue={queue} key={key} error=WRONGTYPE" in record.getMessage()
    ]


@pytest.mark.usefixtures("counted")
def test_a_queue_whose_metric_hash_holds_another_type_is_left_out_of_the_counters_alone(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = backend.broker.queue_keys("reports").metrics
    redis_client.set(key, "written by another program")
    caplog.set_level(logging.WARNING, COUNTERS)

    found = scrape()  # answered 200

    assert value(found, "threadmill_backend_up") == 1
    assert queues_counted(found) == {"default", "emails"}
    assert value(found, FINISHED, queue="default", task=ADD, outcome="successful") == 4
    assert value(found, FINISHED, queue="emails", task=ADD, outcome="successful") == 4
    assert value(found, "threadmill_queue_tasks", queue="reports", state="ready") == 0
    assert value(found, "threadmill_oldest_ready_seconds", queue="reports") == 0
    [said] = skipped(caplog, "reports", key)
    assert said.startswith(
        "Metric counters skipped, their key holds another type (delete it, or give each "
        "project its own OPTIONS['key_prefix'])"
    )


@pytest.mark.usefixtures("counted")
def test_one_shard_whose_metric_hash_holds_another_type_leaves_its_queue_out_whole(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = backend.broker.queue_keys(backend.broker.parts("emails")[1]).metrics
    redis_client.delete(key)
    redis_client.set(key, "written by another program")
    caplog.set_level(logging.WARNING, COUNTERS)

    found = scrape()

    assert value(found, "threadmill_backend_up") == 1
    assert queues_counted(found) == {"default"}  # not emails at 2 of its 4
    assert value(found, "threadmill_queue_tasks", queue="emails", state="ready") == 0
    assert len(skipped(caplog, "emails", key)) == 1
