"""A replica promoted in a failover is a server the reapers have not seen: its own run_id and a
new replication id, and the reapers' note of the old primary replicated to it. Its first reap
pass holds, as after a restart, so the workers that lived through the failover renew their
leases before any is settled (docs/lifecycle.md, After an outage or a stall). So does a
failback to the old primary that no pass saw: same run_id, a new replication id."""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.reap_hold import ReapHold
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until


@pytest.fixture
def primary_and_replica() -> Iterator[tuple[RedisProcess, RedisProcess]]:
    with (
        redis_process() as primary,
        redis_process("--replicaof", "127.0.0.1", str(primary.port)) as replica,
    ):
        yield primary, replica


def promote(server: RedisProcess) -> None:
    client = redis.Redis.from_url(server.url)
    try:
        client.replicaof("NO", "ONE")
    finally:
        client.close()


def replicate(server: RedisProcess, of: RedisProcess) -> None:
    """Make ``server`` a replica of ``of``, and wait until it has synced."""
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        client.replicaof("127.0.0.1", str(of.port))
        wait_until(
            lambda: client.info("replication").get("master_link_status") == "up",
            f"{server.url} synced",
        )
    finally:
        client.close()


def held_on_first_pass(backend: ThreadmillTaskBackend) -> str:
    """Run a reaper's first pass; return why it held ("" if it settled)."""
    hold = ReapHold(backend.settings.renewal_s)
    hold.run(backend)
    return hold.held


def backend_at(server: RedisProcess, key_prefix: str) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default", {"LOCATION": server.url, "OPTIONS": {"key_prefix": key_prefix}}
    )


def noted(primary: RedisProcess, replica: RedisProcess, key_prefix: str) -> None:
    """Have a reaper note the primary, and wait until the note is on the replica too."""
    broker = backend_at(primary, key_prefix).broker
    assert broker.ms_since_server_seen() > 10**12  # the first note ever: no hold
    note = broker.client.get(broker.keyspace.server)
    copy = redis.Redis.from_url(replica.url, decode_responses=True)
    try:
        wait_until(lambda: copy.get(broker.keyspace.server) == note, "the note replicated")
    finally:
        copy.close()


def test_the_first_pass_on_a_promoted_replica_holds(
    primary_and_replica: tuple[RedisProcess, RedisProcess], key_prefix: str
) -> None:
    primary, replica = primary_and_replica
    noted(primary, replica, key_prefix)
    promote(replica)  # the failover: the replica is the primary now
    assert held_on_first_pass(backend_at(replica, key_prefix)).startswith(
        "a new Redis server (restarted or failed over), first seen 0."
    )


def test_a_failback_no_pass_saw_holds_too(
    primary_and_replica: tuple[RedisProcess, RedisProcess], key_prefix: str
) -> None:
    primary, replica = primary_and_replica
    noted(primary, replica, key_prefix)
    promote(replica)  # the failover; no reaper passes while it is the primary
    replicate(primary, of=replica)
    promote(primary)  # the failback: the same process, so the same run_id
    assert held_on_first_pass(backend_at(primary, key_prefix)).startswith(
        "a new Redis server (restarted or failed over), first seen 0."
    )
