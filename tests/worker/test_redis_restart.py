"""A Redis with AOF restarted mid-run: the worker reconnects and finishes, nothing is lost.

An acquire whose reply the kill cut off leaves its tasks reserved by nobody; they return to
READY once their lease lapses (docs/worker.md). The test hands them back with their own tokens
right away, as the reaper would a lease_ttl later, instead of waiting a minute.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Lease
from django_threadmill.compat import TaskResultStatus
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until
from tests.worker import tasks


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which the test kills and restarts."""
    return durable_redis.url


def test_worker_survives_a_redis_restart(
    backend: ThreadmillTaskBackend,
    durable_redis: RedisProcess,
    tmp_path: Path,
    start_worker: Callable[..., Command],
) -> None:
    runs = tmp_path / "runs.log"
    results = backend.enqueue_many(tasks.count_run, [((str(runs), n), {}) for n in range(3000)])
    worker = start_worker("--threads", "2", "--prefetch", "16", "--burst")

    wait_until(lambda: runs.exists() and runs.read_text().count("\n") > 300, "some tasks running")
    durable_redis.kill()
    worker.wait_for_log("Fetch failed|Ack batch failed|Lease renewal failed")
    durable_redis.start()

    assert worker.wait(120) == 0, worker.log
    stranded = [lease for result in results if (lease := reserved_lease(backend, result.id))]
    assert len(stranded) <= 16, stranded  # at most one lost acquire reply: --prefetch 16
    if stranded:
        assert backend.broker.release(stranded) == len(stranded)
        assert start_worker("--burst").wait(60) == 0
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL, result.id
    executed = {int(line) for line in runs.read_text().split()}
    assert executed == set(range(3000))


def reserved_lease(backend: ThreadmillTaskBackend, task_id: str) -> Lease | None:
    """Return the lease of a task left reserved (its acquire reply was lost), else None."""
    record = backend.broker.record(task_id) or {}
    if record.get("state") != "reserved":
        return None
    return Lease(task_id=task_id, queue="default", token=record["token"])
