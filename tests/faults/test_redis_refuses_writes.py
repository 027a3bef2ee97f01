"""Redis refusing writes for a while (MISCONF: it cannot save; NOREPLICAS: too few replicas):
the worker retries and carries on once writes are back, losing and repeating nothing.

A raw error reply once ended the ack writer and the lease keeper, and the process then hung in
its own stop: results were lost and tasks sat leased until someone killed it.
"""

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from tests.limits.tasks import hold_until
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until, worker

from . import tasks
from .support import all_successful, enqueue_counted, executions


@pytest.fixture(scope="module")
def server() -> Iterator[RedisProcess]:
    with redis_process() as started:
        yield started


@pytest.fixture
def redis_url(server: RedisProcess) -> str:
    return server.url


@pytest.fixture
def refusing(redis_client: redis.Redis) -> Iterator[None]:
    """Make Redis refuse every write (it asks for a replica it does not have) until undone."""
    yield
    redis_client.config_set("min-replicas-to-write", 0)


def test_enqueue_names_the_refusal(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, refusing: None
) -> None:
    redis_client.config_set("min-replicas-to-write", 1)
    refusal = r"refuses writes: fewer replicas .*\(NOREPLICAS .*\)\. Check its replicas"
    with pytest.raises(BrokerUnavailable, match=refusal):
        tasks.count_run.enqueue("unused")


def test_the_worker_waits_out_refused_writes(
    backend: ThreadmillTaskBackend,
    server: RedisProcess,
    redis_client: redis.Redis,
    key_prefix: str,
    refusing: None,
    tmp_path: Path,
) -> None:
    marker, release, log = tmp_path / "holding", tmp_path / "release", tmp_path / "runs.log"
    holder = hold_until.enqueue(str(marker), str(release))
    command = worker(server.url, key_prefix, "--threads", "2", lease_ttl_s=3)
    try:
        wait_until(marker.exists, "the held task runs")
        redis_client.config_set("min-replicas-to-write", 1)
        release.touch()  # its outcome, its renewals and any fetch are refused now
        wait_until(lambda: "refuses writes" in command.log, "the refusal logged", 30)
        redis_client.config_set("min-replicas-to-write", 0)
        wait_until(lambda: holder.refresh() or all_successful([holder]), "the held outcome")
        later = enqueue_counted(backend, log, 50)
        wait_until(lambda: all_successful(later), "tasks enqueued after", 30)
        command.signal(signal.SIGTERM)
        assert command.wait() == 0, command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in later}
