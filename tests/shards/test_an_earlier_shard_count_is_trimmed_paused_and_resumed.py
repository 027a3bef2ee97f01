"""What the deploy of a new ``queue_shards`` does to the keys of the earlier count
(docs/scaling.md, Changing the shard count): the reaper trims their done index, and pause and
resume reach them, so the workers kept on the earlier count obey.

Before, the earlier count's done index kept every id it had indexed once its workers stopped
(nothing sent there again: a day of ids at ``result_ttl``, in Redis for good), and a resume
under the new count left the earlier count paused: the worker kept to run its tasks never took
them, and the resume said the queue "was not paused".
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.support import Command, run_to_completion, worker

from .conftest import SHARDS

OLD = {"queue_shards": {"default": SHARDS}}  # the count the package's backend stores under
NEW = {"queue_shards": {"default": 2}}
ECHO_PATH = "testproject.example.tasks.echo"


def command(redis_url: str, key_prefix: str, *args: str, **options: object) -> str:
    """Run the manage.py command ``args`` under the new count (and ``options``); its output."""
    return run_to_completion(Command(redis_url, key_prefix, *args, options={**NEW, **options}))


def test_the_reaper_of_the_new_count_trims_the_earlier_counts_done_index(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    backend.enqueue_many(echo, [([n], {}) for n in range(40)])
    run_to_completion(worker(redis_url, key_prefix, "--burst", options=OLD))
    old = [backend.broker.queue_keys(part) for part in backend.broker.parts("default")]
    assert sum(redis_client.zcard(keys.done) for keys in old) == 40
    # Its paths unseen for longer than the scrape keeps one a send counts (inspect/counters.py).
    redis_client.zadd(old[0].metrics_paths, {ECHO_PATH: 0})
    counters = redis_client.hgetall(old[0].metrics)

    # The new deploy's result_ttl has every id indexed under the old count expired (what a
    # day's wait does); no worker of the old count is left to trim them.
    command(redis_url, key_prefix, "threadmill_reap", "--once", result_ttl=0.001)

    assert [redis_client.zcard(keys.done) for keys in old] == [0] * SHARDS
    # The trim forgets no path there: the scrape sums those counters as they stand.
    assert redis_client.hgetall(old[0].metrics) == counters
    assert redis_client.zscore(old[0].metrics_paths, ECHO_PATH) == 0


def test_a_resume_under_the_new_count_lets_the_earlier_counts_worker_go(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(8)])
    assert backend.broker.pause("default", "the operator, before the deploy") is True

    said = command(redis_url, key_prefix, "threadmill_queue", "resume", "default")

    assert "\nResumed queue default of backend default:" in said, said
    run_to_completion(worker(redis_url, key_prefix, "--burst", options=OLD))
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_a_pause_under_the_new_count_holds_the_earlier_counts_workers(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    backend.enqueue_many(echo, [([n], {}) for n in range(8)])

    command(redis_url, key_prefix, "threadmill_queue", "pause", "default")

    old = [backend.broker.queue_keys(part) for part in backend.broker.parts("default")]
    assert all(redis_client.exists(keys.paused) for keys in old)
    assert backend.broker.acquire("default", 100).reservations == []
    assert backend.broker.resume("default", "test") is True
    assert len(backend.broker.acquire("default", 100).reservations) == 8
