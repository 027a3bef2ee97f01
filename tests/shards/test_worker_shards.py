"""A real worker on a sharded queue: it drains every shard, and an idle one wakes for any."""

from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.support import Command, run_to_completion, running, wait_until, worker

from .conftest import SHARDS

OPTIONS = {"queue_shards": {"default": SHARDS}}


@pytest.fixture
def idle_worker(redis_url: str, key_prefix: str) -> Iterator[Command]:
    with running(worker(redis_url, key_prefix, "--threads", "2", options=OPTIONS)) as command:
        yield command


@pytest.mark.parametrize("prefetch", ["8", "2"])
def test_a_burst_worker_runs_every_shards_tasks(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, prefetch: str
) -> None:
    """With a prefetch below the shard count, the shards a refill only peeks at still count:
    the worker must not take the queue for empty while one of them holds tasks."""
    results = backend.enqueue_many(echo, [([n], {}) for n in range(200)])
    args = ("--threads", "2", "--prefetch", prefetch, "--burst")
    run_to_completion(worker(redis_url, key_prefix, *args, options=OPTIONS))
    for result in results:
        result.refresh()
        assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, result.args[0])


def test_an_idle_worker_picks_up_from_each_shard(
    idle_worker: Command, backend: ThreadmillTaskBackend
) -> None:
    """One task at a time, each waited for, until every shard has served one."""
    served: set[int] = set()
    while served != set(range(SHARDS)):
        result = echo.enqueue(len(served))
        wait_until(
            lambda r=result: (r.refresh(), r.status)[1] == TaskResultStatus.SUCCESSFUL,  # type: ignore[misc]
            f"task {result.id} ran",
        )
        served.add(shard_of(result.id, SHARDS))
