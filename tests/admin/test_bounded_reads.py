"""A list page reads one window of the index and the rows it shows: no KEYS, no SCAN."""

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.broker.inspect import sightings as sightings_module
from django_threadmill.broker.inspect.inspector import Inspector
from django_threadmill.codec.times import now_ms
from testproject.example.tasks import echo
from tests.admin.conftest import TASKS_URL
from tests.backend_support import WORKER
from tests.support import command_calls

STORED = 300  # finished results, six pages' worth


def store_results(backend: ThreadmillTaskBackend) -> None:
    """Finish STORED tasks in one batch, as a worker's ack writer would."""
    results = backend.enqueue_many(echo, [((n,), {}) for n in range(STORED)])
    reservations = backend.broker.acquire("default", STORED).reservations
    assert len(reservations) == len(results)
    finishes = [
        Finish(
            lease=r.lease,
            outcome=Outcome.SUCCESSFUL,
            value="1",
            started_ms=now_ms(),
            finished_ms=now_ms(),
        )
        for r in reservations
    ]
    assert backend.broker.finish(WORKER, finishes) == []
    backend.broker.send_metrics()  # and the done index, as the ack writer does on its clock


@pytest.mark.parametrize(("status", "indexes"), [("", 4), ("finished", 1)])
def test_a_page_reads_only_what_it_shows(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    status: str,
    indexes: int,
) -> None:
    store_results(backend)
    before = command_calls(redis_client)

    page = operator.get(TASKS_URL, {"status": status}).content.decode()

    calls = {
        name: n - before.get(name, 0)
        for name, n in command_calls(redis_client).items()
        if n != before.get(name, 0)
    }
    assert f"Showing 1 to 50 of {STORED}." in page
    assert not {"keys", "scan", "sscan", "zscan", "hscan"} & set(calls)
    assert calls["hmget"] == 50  # the rows shown, nothing more
    # A window for the page and one for "more?", per queue (3) and index walked.
    assert calls.get("zrevrange", 0) + calls.get("zrange", 0) <= 2 * 3 * indexes


def test_worker_sightings_are_read_to_a_bound_latest_first(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each process start adds a sighting kept a day; health, scrapes and the admin read them
    all, which took seconds at 30,000 (restarts, --max-tasks recycling)."""
    monkeypatch.setattr(sightings_module, "MAX_SIGHTINGS", 3)
    keys = backend.broker.queue_keys("default")
    for n in range(6):
        redis_client.zadd(keys.workers, {f"worker-{n}": 1_000 + n})
        redis_client.hset(keys.held, f"worker-{n}", n)
        redis_client.hset(keys.threads, f"worker-{n}", 4)
    sightings = Inspector(backend.broker).workers(["default"])
    assert [(s.worker_id, s.held, s.threads) for s in sightings] == [
        ("worker-5", 5, 4),
        ("worker-4", 4, 4),
        ("worker-3", 3, 4),
    ]
