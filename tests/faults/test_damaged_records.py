"""A worker meets damaged records among good ones: each good task runs once, the rest is set aside.

Before damaged records were handled one by one, one key of another type among the tasks of an
acquire left the tasks after it ready in no index (and those before it reserved with no lease),
and the burst worker still exited 0.
"""

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import chain, step
from tests.support import run_to_completion, worker
from tests.workflows import tasks as workflow_tasks

from .support import all_successful, enqueue_counted, executions

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
    results = enqueue_counted(backend, log, TASKS)
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


def no_payload(client: redis.Redis, key: str) -> None:
    client.hdel(key, "payload")


def payload_not_utf8(client: redis.Redis, key: str) -> None:
    client.hset(key, "payload", b'{"path":"\xff\xfe"}')


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(no_payload, "no payload field"), (payload_not_utf8, "payload not UTF-8")],
)
def test_a_burst_worker_sets_aside_a_record_it_cannot_reply_with_and_runs_its_batch(
    damage: Callable[[redis.Redis, str], None],
    reason: str,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    """A ready record whose payload field was deleted, or holds bytes that do not decode as
    UTF-8, killed the prefetcher on the acquire reply (exit 5): its batch-mates held until
    their lease lapsed, and the reaper put it back at the head, over and over."""
    log = tmp_path / "runs.log"
    results = enqueue_counted(backend, log, 9)
    keys = backend.broker.queue_keys("default")
    damaged = results[0].id
    damage(redis_client, keys.record(damaged))

    output = run_to_completion(
        worker(redis_url, key_prefix, "--processes", "0", "--burst", "--threads", "4")
    )

    good = results[1:]
    assert all_successful(good)
    assert executions(log) == {result.id: 1 for result in good}
    assert redis_client.hget(keys.damaged, damaged).endswith(f" acquire: {reason}")
    assert redis_client.zcard(keys.ready) == redis_client.zcard(keys.leases) == 0
    assert "Thread died" not in output


def test_a_burst_worker_fails_a_damaged_workflow_and_runs_the_others(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    """A workflow's step field that is not JSON once stopped the worker's drainer, and the
    process restarted into it; now that workflow fails, naming why, and the others run."""
    damaged = chain(step(workflow_tasks.number, 1), step(workflow_tasks.add, 1)).enqueue()
    redis_client.hset(backend.broker.keyspace.workflow(damaged.id), "p:1", "{not json")
    good = chain(step(workflow_tasks.number, 2), step(workflow_tasks.add, 2)).enqueue()

    output = run_to_completion(worker(redis_url, key_prefix, "--burst", "--threads", "2"))

    good.refresh()
    assert good.status == TaskResultStatus.SUCCESSFUL
    last = good.results[-1]
    assert last is not None
    assert last.return_value == 4
    assert redis_client.hget(backend.broker.keyspace.workflow(damaged.id), "status") == "failed"
    assert "Workflow step cannot be enqueued, the workflow fails" in output
    assert "Thread died" not in output
