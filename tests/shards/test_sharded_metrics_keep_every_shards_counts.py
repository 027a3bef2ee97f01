"""A sharded queue's exported counters are exactly what its tasks did, in every shard.

metrics.lua forgets a task path per queue part: one no send counted for PATH_TTL_MS leaves that
part's ``P:metrics:paths`` with its lifetime series. A queue split N ways spreads a path's runs
over its shards, so a weekly task on six shards goes unseen in one of them for five weeks four
times in ten: that shard dropped the path's series while it ran every week, the queue's summed
counters fell (Prometheus reads a counter reset, and ``increase()`` counts what is left as new),
and the reaper's pass, which sends to every shard, did it as soon as the five weeks were up.
A send now marks each path it counts as seen in every shard of its queue.
"""

from collections.abc import Sequence
from typing import Any

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import NewTask
from django_threadmill.broker.keys import shard_of
from django_threadmill.codec.ids import make_task_id, new_task_hex
from django_threadmill.compat import Task
from django_threadmill.enqueue.prepare import encode_call
from testproject.example.tasks import echo, fail, flaky
from tests.broker.conftest import start
from tests.support import Command, run_to_completion, worker

from .conftest import SHARDS

TOKEN = "s3cret-token-for-the-scraper"
OPTIONS: dict[str, object] = {"queue_shards": {"default": SHARDS}}
DAY_MS = 24 * 3600 * 1000
ECHO, FAIL, FLAKY = (f"testproject.example.tasks.{name}" for name in ("echo", "fail", "flaky"))
type Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {**OPTIONS, "metrics_token": TOKEN}


def placed(backend: ThreadmillTaskBackend, task: Task, args: Sequence[Any], shard: int) -> NewTask:
    """Return a call of ``task`` whose id lives in ``shard`` of "default"."""
    while shard_of(task_id := make_task_id(new_task_hex(), "default"), SHARDS) != shard:
        pass
    return encode_call(task, args, {}, broker=backend.broker, task_id=task_id)[0]


def run_in(backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, shards: range) -> None:
    """Enqueue, in each of ``shards``, an echo and a flaky (retried twice, then successful)
    that succeed and a fail that fails; run them with a real worker."""
    for shard in shards:
        calls = [(echo, ["ok"]), (fail, ["no"]), (flaky, [])]
        tasks = [placed(backend, task, args, shard) for task, args in calls]
        assert backend.broker.enqueue("default", tasks).stored == 3
    run_to_completion(worker(redis_url, key_prefix, "--threads", "2", "--burst", options=OPTIONS))


def days_pass(backend: ThreadmillTaskBackend, redis_client: redis.Redis, days: int) -> None:
    """Date every shard's task paths ``days`` earlier, as if that long had passed."""
    for part in backend.broker.parts("default"):
        paths = backend.broker.queue_keys(part).metrics_paths
        seen: list[tuple[str, float]] = redis_client.zrange(paths, 0, -1, withscores=True)  # type: ignore[assignment]
        redis_client.zadd(paths, {path: score - days * DAY_MS for path, score in seen})


def scrape() -> Samples:
    response = Client().get("/threadmill/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def counters(found: Samples, path: str) -> dict[str, float]:
    """Return the exported counters of ``path`` in "default", by a short name."""
    labels = {"backend": "default", "queue": "default", "task": path}

    def value(name: str, **more: str) -> float:
        return found.get((name, frozenset({**labels, **more}.items())), 0)

    return {
        "successful": value("threadmill_tasks_finished_total", outcome="successful"),
        "failed": value("threadmill_tasks_finished_total", outcome="failed"),
        "retries": value("threadmill_retries_total"),
        "expired": value("threadmill_leases_expired_total"),
        "runs": value("threadmill_task_run_seconds_count"),
    }


def test_a_sharded_queue_exports_every_shards_counts_after_a_shard_went_quiet(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    run_in(backend, redis_url, key_prefix, range(SHARDS))  # every shard, 36 days ago
    days_pass(backend, redis_client, 34)
    run_in(backend, redis_url, key_prefix, range(1, SHARDS))  # shard 0 gets none, 2 days ago
    days_pass(backend, redis_client, 2)
    # A worker died running an echo: the reaper settles it as FAILED (echo does not retry).
    lost = placed(backend, echo, ["lost"], 2)
    assert backend.broker.enqueue("default", [lost]).stored == 1
    [reservation] = backend.broker.acquire("default", SHARDS).reservations
    assert backend.broker.start("dead-worker", [start(reservation.lease)]) == []
    leases = backend.broker.queue_keys(backend.broker.part_in("default", lost.id)).leases
    redis_client.zadd(leases, {lost.id: 1}, xx=True)
    reaper = Command(redis_url, key_prefix, "threadmill_reap", "--once", options=OPTIONS)
    run_to_completion(reaper)  # its pass sends to every shard, shard 0 included

    found = scrape()

    runs = 2 * SHARDS - 1  # each path ran once per shard, then once more in all but shard 0
    assert counters(found, ECHO) == {
        "successful": runs,
        "failed": 1,
        "retries": 0,
        "expired": 1,
        "runs": runs,
    }
    assert counters(found, FAIL) == {
        "successful": 0,
        "failed": runs,
        "retries": 0,
        "expired": 0,
        "runs": runs,
    }
    assert counters(found, FLAKY) == {
        "successful": runs,
        "failed": 0,
        "retries": 2 * runs,
        "expired": 0,
        "runs": 3 * runs,
    }
    assert not any(labels for _, labels in found if ("task", "other") in labels)
