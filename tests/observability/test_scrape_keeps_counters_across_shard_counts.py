"""A queue's counters survive a change of its shard count (docs/scaling.md, Changing the shard
count).

The scrape read only the parts of the count its settings gave. After a change, every counter
counted under the old count vanished (Prometheus read the fall as a reset, a task path's series
ended), the outcomes of the workers still serving the old count were never exported, and two
web processes of a rolling deploy exported different totals for the same queue. The scrape now
sums every count the queue counted under; in an earlier count's parts, which no send reaches to
forget a path, a path not counted for five weeks is left out unless the configured count still
counts it.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.metrics import PATH_TTL_MS
from django_threadmill.compat import task_backends
from testproject.example.tasks import add, fail
from tests.conftest import tasks_setting
from tests.observability.test_metrics_view import ADD, FAIL, TOKEN, scrape
from tests.support import run_to_completion, worker

HOUR_MS = 3_600_000
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@contextmanager
def sharded(redis_url: str, key_prefix: str, shards: int) -> Iterator[ThreadmillTaskBackend]:
    """Yield the test's backend with "default" split ``shards`` ways (1: unsharded)."""
    options = {"metrics_token": TOKEN, "queue_shards": {"default": shards}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **options)):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        yield backend


def run_burst(redis_url: str, key_prefix: str, shards: int) -> None:
    options = {"queue_shards": {"default": shards}}
    run_to_completion(worker(redis_url, key_prefix, "--burst", options=options))


def finished(found: Samples, task: str, outcome: str) -> float | None:
    labels = {"backend": "default", "queue": "default", "task": task, "outcome": outcome}
    return found.get(("threadmill_tasks_finished_total", frozenset(labels.items())))


def test_counters_of_the_old_shard_count_stay_in_the_scrape(
    redis_url: str, key_prefix: str
) -> None:
    with sharded(redis_url, key_prefix, 1):
        for n in range(3):
            add.enqueue(n, n)
        fail.enqueue("before")
    run_burst(redis_url, key_prefix, 1)
    with sharded(redis_url, key_prefix, 3):
        for n in range(2):
            add.enqueue(n, n)
    run_burst(redis_url, key_prefix, 3)

    for shards in (3, 1):  # a web process of either deploy exports the same totals
        with sharded(redis_url, key_prefix, shards):
            found = scrape()
        assert finished(found, ADD, "successful") == 5, shards
        assert finished(found, FAIL, "failed") == 1, shards


def test_a_path_stale_under_the_old_count_ends_unless_still_counted(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    with sharded(redis_url, key_prefix, 3) as backend:
        now = backend.broker.server_time_ms()
        old = backend.broker.queue_keys("default")  # the unsharded count's keys
        redis_client.hset(
            old.metrics,
            mapping={"gone|successful": 5, "live|successful": 7, "recent|successful": 2},
        )
        stale = now - PATH_TTL_MS - HOUR_MS
        redis_client.zadd(old.metrics_paths, {"gone": stale, "live": stale, "recent": now})
        [shard, *_] = backend.broker.parts("default")
        redis_client.hset(backend.broker.queue_keys(shard).metrics, "live|successful", 1)

        found = scrape()

    assert finished(found, "gone", "successful") is None
    assert finished(found, "live", "successful") == 8
    assert finished(found, "recent", "successful") == 2


@pytest.mark.parametrize("paths", ["set", "none"])
def test_old_paths_without_a_time_are_kept(
    redis_url: str, key_prefix: str, redis_client: redis.Redis, paths: str
) -> None:
    """Paths kept as a set (earlier versions) or not at all count as seen, as metrics.lua
    takes them."""
    with sharded(redis_url, key_prefix, 3) as backend:
        old = backend.broker.queue_keys("default")
        redis_client.hset(old.metrics, "kept|failed", 4)
        if paths == "set":
            redis_client.sadd(old.metrics_paths, "kept")

        found = scrape()

    assert finished(found, "kept", "failed") == 4
