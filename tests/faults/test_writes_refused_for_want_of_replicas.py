"""A primary set to ``min-replicas-to-write 1`` with no replica refuses every write (NOREPLICAS):
enqueue says what to check, and the worker backs off and carries on once a replica is back,
losing and repeating nothing.

A worker serving several queues took the refusal for one queue's damaged key: the acquire of a
queue holding tasks failed (it writes), the empty ones answered (they write nothing), so it held
that queue back and logged "the others go on", while no queue could reserve anything.
"""

import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from tests.limits.tasks import hold_until
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until, worker

from . import tasks
from .support import all_successful, enqueue_counted, executions

# The worker's words for holding one queue back, as for a key of another type in it.
HELD = "Fetch from a queue failed"
# The primary: refuses writes while no replica acknowledges it; syncs a replica at once.
PRIMARY = ("--min-replicas-to-write", "1", "--repl-diskless-sync-delay", "0")


@pytest.fixture(scope="module")
def server() -> Iterator[RedisProcess]:
    with redis_process(*PRIMARY) as started:
        yield started


@pytest.fixture
def redis_url(server: RedisProcess) -> str:
    return server.url


def fetches_failed(log: str) -> int:
    """Count the refills the worker backed off after, whole."""
    return len(re.findall(r"Fetch failed, retrying in \S+ error=.*NOREPLICAS", log))


def good_replicas(client: redis.Redis) -> int:
    """Return how many replicas the primary counts toward its min-replicas-to-write."""
    return int(client.info("replication")["min_slaves_good_slaves"])


@contextmanager
def replica_of(server: RedisProcess) -> Iterator[None]:
    """Give ``server`` a replica for the block: it takes writes once the replica acknowledges
    it, and refuses them again at once when the block ends (the replica is killed)."""
    client = redis.Redis(port=server.port)
    try:
        with redis_process("--replicaof", "127.0.0.1", str(server.port)):
            wait_until(lambda: good_replicas(client) >= 1, "the replica acknowledged")
            yield
    finally:
        client.close()


def test_enqueue_says_nothing_was_written_and_what_to_check(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    with pytest.raises(BrokerUnavailable) as raised:
        tasks.count_run.enqueue("unused")
    message = str(raised.value)
    assert not isinstance(raised.value, MaybeApplied)
    assert "refuses writes: fewer replicas" in message, message
    assert "NOREPLICAS Not enough good replicas to write." in message
    assert "min-replicas-max-lag" in message
    assert "INFO replication" in message
    assert "MISCONF" not in message
    assert "disk" not in message
    assert message.endswith("nothing was written.")
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_a_worker_backs_off_then_runs_everything_once_a_replica_is_back(
    backend: ThreadmillTaskBackend, server: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    marker, release, log = tmp_path / "holding", tmp_path / "release", tmp_path / "runs.log"
    command = worker(server.url, key_prefix, "--threads", "1")
    try:
        with replica_of(server):
            holder = hold_until.enqueue(str(marker), str(release))
            wait_until(marker.exists, "the held task runs")
            later = enqueue_counted(backend, log, 50)  # in "default"; the other queues empty
        release.touch()  # its outcome, renewals and fetches are refused now
        command.wait_for_log(r"Ack batch failed .*NOREPLICAS")
        # Backed off and tried again whole, the empty queues probed beside: a hold of the
        # queue with tasks would be said at once.
        wait_until(lambda: fetches_failed(command.log) >= 3 or HELD in command.log, "refills")
        assert HELD not in command.log, command.log
        with replica_of(server):
            wait_until(lambda: holder.refresh() or all_successful([holder]), "the held outcome")
            wait_until(lambda: all_successful(later), "the tasks left waiting", 60)
            command.signal(signal.SIGTERM)
            assert command.wait() == 0, command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in later}
