"""A primary made a read-only replica under a running worker (a failover without Sentinel, or
REPLICAOF by hand): the worker says so, backs off whole refills, and carries on once it is a
primary again, losing and repeating nothing.

Redis ends a BLPOP with a raw ``UNBLOCKED`` reply when it turns into a replica: untranslated,
it killed the idle worker's prefetcher thread (``Thread died``, exit code 5). And READONLY was
taken for one queue's damaged key: the acquire of a queue holding tasks failed (it writes), the
empty ones answered (they write nothing), so the worker held that queue back and logged "the
others go on", while no queue could reserve anything.
"""

import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from django_threadmill.management.health import HealthCode
from tests.limits.tasks import hold_until
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import run_python, wait_until, worker

from . import tasks
from .support import all_successful, enqueue_counted, executions

# The worker's words for holding one queue back, as for a key of another type in it.
HELD = "Fetch from a queue failed"
SYNC_AT_ONCE = ("--repl-diskless-sync-delay", "0")  # a replica is synced without a 5 s wait


@pytest.fixture
def primary() -> Iterator[RedisProcess]:
    """The worker's LOCATION: a primary, made a replica by the test."""
    with redis_process(*SYNC_AT_ONCE) as started:
        yield started


@pytest.fixture
def redis_url(primary: RedisProcess) -> str:
    return primary.url


def client_of(server: RedisProcess) -> redis.Redis:
    return redis.Redis(port=server.port, decode_responses=True)


def make_replica(server: RedisProcess, of: RedisProcess) -> None:
    """Make ``server`` a replica of ``of`` (its data replaced by a copy of ``of``'s)."""
    with client_of(server) as client:
        client.replicaof("127.0.0.1", str(of.port))
        wait_until(
            lambda: client.info("replication")["master_link_status"] == "up", "the replica synced"
        )


def promote(server: RedisProcess) -> None:
    """Make ``server`` a primary again, keeping its data."""
    with client_of(server) as client:
        client.replicaof("NO", "ONE")


def copied_everything(primary: RedisProcess, replica: RedisProcess) -> bool:
    """Tell whether ``replica`` holds every write ``primary`` took so far."""
    with client_of(primary) as source, client_of(replica) as copy:
        written = source.info("replication")["master_repl_offset"]
        return bool(copy.info("replication")["slave_repl_offset"] >= written)


def blocked_clients(server: RedisProcess) -> int:
    with client_of(server) as client:
        return int(client.info("clients")["blocked_clients"])


def idle_wait_error(broker: Broker, server: RedisProcess, end_it: threading.Event) -> Exception:
    """Return what the broker's idle wait raised once ``end_it`` was set while it was blocked
    in Redis (the caller sets it from inside the wait, as ``end_the_wait`` does)."""
    raised: list[Exception] = []

    def wait() -> None:
        try:
            broker.wait_for_queues(["default"], "vm:1:0001", 30)
        except Exception as exc:
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_until(lambda: blocked_clients(server) >= 1, "the wait blocked in Redis")
    end_it.set()
    waiter.join(30)
    assert not waiter.is_alive()
    [error] = raised
    return error


def test_a_wait_ended_as_redis_becomes_a_replica_says_so(
    broker: Broker, primary: RedisProcess
) -> None:
    end_it = threading.Event()
    with redis_process(*SYNC_AT_ONCE) as other:

        def demote() -> None:
            end_it.wait(30)
            make_replica(primary, other)

        demoting = threading.Thread(target=demote)
        demoting.start()
        error = idle_wait_error(broker, primary, end_it)
        demoting.join(60)
    assert isinstance(error, BrokerUnavailable), repr(error)
    message = str(error)
    assert "became a read-only replica and ended a blocked wait (UNBLOCKED" in message
    assert "point LOCATION at the primary" in message
    assert message.endswith("nothing was changed.")


def test_a_wait_an_operator_ends_says_so(broker: Broker, primary: RedisProcess) -> None:
    end_it = threading.Event()

    def unblock() -> None:
        end_it.wait(30)
        with client_of(primary) as client:
            [waiter] = [c for c in client.client_list() if c["cmd"] == "blpop"]
            client.client_unblock(int(waiter["id"]), error=True)

    unblocking = threading.Thread(target=unblock)
    unblocking.start()
    error = idle_wait_error(broker, primary, end_it)
    unblocking.join(30)  # it may still be closing its client once the wait has ended
    assert isinstance(error, BrokerUnavailable), repr(error)
    assert "ended a blocked wait: a client ran CLIENT UNBLOCK ... ERROR" in str(error)


def test_an_enqueue_to_a_demoted_primary_names_the_fix(
    backend: ThreadmillTaskBackend, primary: RedisProcess
) -> None:
    with redis_process(*SYNC_AT_ONCE) as other:
        make_replica(primary, other)
        with pytest.raises(BrokerUnavailable) as raised:
            tasks.count_run.enqueue("unused")
    message = str(raised.value)
    assert not isinstance(raised.value, MaybeApplied)
    assert "is a read-only replica (You can't write against a read only replica" in message
    assert "point LOCATION at the primary (after a failover: the replica promoted)" in message
    assert "OPTIONS['sentinel']" in message
    assert message.endswith("nothing was written.")


def test_health_on_a_demoted_primary_says_redis_not_the_workers(
    primary: RedisProcess, key_prefix: str
) -> None:
    """Its workers renew nothing there: "fewer worker processes" (exit 1) had a liveness probe
    restart them, which no replica fixes. It is Redis that cannot serve (exit 3)."""
    with redis_process(*SYNC_AT_ONCE) as other:
        make_replica(primary, other)
        probe = run_python(
            "manage.py", "threadmill_health", redis_url=primary.url, key_prefix=key_prefix
        )
        passed = run_python(
            "manage.py",
            "threadmill_health",
            "--redis-down-ok",
            redis_url=primary.url,
            key_prefix=key_prefix,
        )
    assert probe.returncode == HealthCode.UNREACHABLE, probe.stderr
    assert f"Redis is a read-only replica of 127.0.0.1:{other.port}" in probe.stderr
    assert "Point LOCATION at the primary" in probe.stderr
    assert "fewer worker processes" not in probe.stderr
    assert passed.returncode == HealthCode.HEALTHY, passed.stderr
    assert passed.stderr.startswith("Redis unavailable, passing (--redis-down-ok) host=")


def fetches_failed(log: str) -> int:
    """Count the refills the worker backed off after, whole, as Redis was a replica."""
    return len(re.findall(r"Fetch failed, retrying in \S+ error=.*read-only replica", log))


def test_a_worker_backs_off_then_runs_everything_once_a_primary_again(
    backend: ThreadmillTaskBackend, primary: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    marker, release, log = tmp_path / "holding", tmp_path / "release", tmp_path / "runs.log"
    command = worker(primary.url, key_prefix, "--threads", "1")
    try:
        with redis_process(*SYNC_AT_ONCE, "--replicaof", "127.0.0.1", str(primary.port)) as other:
            holder = hold_until.enqueue(str(marker), str(release))  # in "reports"
            wait_until(marker.exists, "the held task runs")
            wait_until(lambda: copied_everything(primary, other), "the replica caught up")
            # A failover: the replica promoted takes tasks, the primary becomes its replica.
            promote(other)
            at_other = ThreadmillTaskBackend(
                "default", {"LOCATION": other.url, "OPTIONS": {"key_prefix": key_prefix}}
            )
            later = enqueue_counted(at_other, log, 50)  # in "default"; the other queues empty
            make_replica(primary, other)
            release.touch()  # its outcome, renewals and fetches are refused now
            command.wait_for_log(r"Ack batch failed .*read-only replica")
            # Backed off and tried again whole, the empty queues answering beside: a hold of
            # the queue with tasks would be said at once.
            wait_until(lambda: fetches_failed(command.log) >= 3 or HELD in command.log, "refills")
            assert HELD not in command.log, command.log
            promote(primary)  # back, with the data the promoted replica took
        wait_until(lambda: holder.refresh() or all_successful([holder]), "the held outcome")
        wait_until(lambda: all_successful(later), "the tasks enqueued meanwhile", 60)
        command.signal(signal.SIGTERM)
        assert command.wait() == 0, command.log
        assert "Thread died" not in command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in later}
