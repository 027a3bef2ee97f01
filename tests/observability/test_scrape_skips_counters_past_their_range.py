"""A counter field holding a whole number past a Redis counter's range is skipped by a scrape.

Only a hand edit writes one (``HSET`` of 400 digits): ``HINCRBY`` holds a signed 64-bit integer.
It passed ``int()``, then overflowed ``float()`` in prometheus_client, or in the histogram's sum,
and the whole scrape failed with a 500; it is skipped now, as a field that is not a number is,
and the other fields are exported.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.observability.test_metrics_view import ADD, TOKEN, scrape, value

HUGE = "9" * 400  # past a float's range
# Within a float's range, past what HINCRBY takes, either way.
ABOVE_INT64, BELOW_INT64 = str(2**63), str(-(2**63) - 1)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


def test_a_scrape_skips_counters_past_a_redis_counters_range_and_exports_the_others(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    redis_client.hset(
        backend.broker.queue_keys("default").metrics,
        mapping={
            f"{ADD}|successful": 4,
            f"{ADD}|failed": HUGE,
            f"{ADD}|run_ms": HUGE,
            f"{ADD}|retry": ABOVE_INT64,
            f"{ADD}|expired": BELOW_INT64,
        },
    )

    found = scrape()

    labels = {"queue": "default", "task": ADD}
    assert value(found, "threadmill_tasks_finished_total", outcome="successful", **labels) == 4
    assert value(found, "threadmill_tasks_finished_total", outcome="failed", **labels) == 0
    assert value(found, "threadmill_task_run_seconds_sum", **labels) == 0
    assert value(found, "threadmill_retries_total", **labels) == 0
    assert value(found, "threadmill_leases_expired_total", **labels) == 0
