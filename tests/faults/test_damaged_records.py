"""A worker meets damaged records among good ones: each good task runs once, the rest is set aside.

Before damaged records were handled one by one, one key of another type among the tasks of an
acquire left the tasks after it ready in no index (and those before it reserved with no lease),
and the burst worker still exited 0.
"""

import random
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import run_to_completion, worker

from . import tasks
from .support import all_successful, executions

TASKS = 60
DAMAGED = 8


def test_a_burst_worker_runs_every_good_task_once_and_sets_the_damaged_aside(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    results = backend.enqueue_many(tasks.count_run, [((str(log),), {}) for _ in range(TASKS)])
    keys = backend.broker.queue_keys("default")
    rng = random.Random(7)
    damaged = rng.sample([result.id for result in results], DAMAGED)
    for n, task_id in enumerate(damaged):
        record = keys.record(task_id)
        redis_client.delete(record)
        if n % 2:
            redis_client.set(record, "garbage")
        else:
            redis_client.rpush(record, "garbage")
    ghost = "0" * 32 + "@default"  # an index entry without a record
    redis_client.zadd(keys.ready, {ghost: 0})

    output = run_to_completion(
        worker(redis_url, key_prefix, "--burst", "--threads", "4", "--prefetch", "8")
    )

    good = [result for result in results if result.id not in damaged]
    assert all_successful(good)
    assert executions(log) == {result.id: 1 for result in good}
    assert set(redis_client.hgetall(keys.damaged)) == {*damaged, ghost}
    assert redis_client.zcard(keys.ready) == redis_client.zcard(keys.leases) == 0
    assert "Damaged records set aside queue=default" in output
