"""A task cancelled while it waited, then requeued, adds no sample to the wait histogram.

Its first attempt starts after the requeue, but its record still holds the enqueue time: the
wait counted from there held the time it lay cancelled (a bulk requeue of tasks cancelled days
ago filled the +Inf bucket, and a p95 wait alert fired on a queue that waits for nothing).
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.observability.test_metrics_view import TOKEN, run_burst, scrape, value

ECHO = "testproject.example.tasks.echo"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


def test_only_the_task_never_cancelled_adds_a_wait_sample(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    echo.enqueue(1)
    requeued = echo.enqueue(2)
    assert backend.cancel(requeued.id)
    assert backend.requeue(requeued.id)
    run_burst(redis_url, key_prefix)

    found = scrape()
    labels = {"queue": "default", "task": ECHO}
    assert value(found, "threadmill_tasks_finished_total", outcome="successful", **labels) == 2
    assert value(found, "threadmill_task_run_seconds_count", **labels) == 2
    assert value(found, "threadmill_task_wait_seconds_count", **labels) == 1
