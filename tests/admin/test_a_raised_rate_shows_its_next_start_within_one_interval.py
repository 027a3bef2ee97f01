"""The queues page shows a raised rate's next start within one interval of the new rate.

A rate raised by a deploy holds at once: a reservation or start the old rate put off is brought
to one interval of the new one when a worker next asks (docs/schedules.md, Per-queue limits).
The page showed the time Redis still held instead: "1/h" raised to "100/s", it said the next
start was up to an hour away while the workers started the queue's tasks 10 ms apart.
"""

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import QUEUES_URL, page

AN_HOUR_MS = 3_600_000  # "1/h": the next reservation and start it stored


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {"emails": {"rate": "100/s"}}}


@pytest.mark.parametrize("bucket", ["rate", "paced"], ids=["reservation", "start turn"])
def test_a_time_put_off_by_a_slower_rate_shows_as_one_interval_on(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, bucket: str
) -> None:
    seconds, micros = redis_client.time()
    an_hour_on = seconds * 1000 + micros // 1000 + AN_HOUR_MS
    redis_client.set(getattr(backend.broker.queue_keys("emails"), bucket), an_hour_on)
    assert "<td>100/s, next start in 10 ms</td>" in page(operator, QUEUES_URL)  # was 3599999 ms
