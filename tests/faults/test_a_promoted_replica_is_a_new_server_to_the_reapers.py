"""A replica promoted in a failover is a server the reapers have not seen: its own run_id, and
the reapers' note of the old primary replicated to it. Its first reap pass holds, as after a
restart, so the workers that lived through the failover renew their leases before any is
settled (docs/lifecycle.md, After an outage or a stall)."""

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


def backend_at(server: RedisProcess, key_prefix: str) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default", {"LOCATION": server.url, "OPTIONS": {"key_prefix": key_prefix}}
    )


def test_the_first_pass_on_a_promoted_replica_holds(
    primary_and_replica: tuple[RedisProcess, RedisProcess], key_prefix: str
) -> None:
    primary, replica = primary_and_replica
    before = backend_at(primary, key_prefix)
    assert before.broker.ms_since_server_seen() > 10**12  # the first note ever: no hold
    noted = before.broker.client.get(before.broker.keyspace.server)
    copy = redis.Redis.from_url(replica.url, decode_responses=True)
    try:
        wait_until(lambda: copy.get(before.broker.keyspace.server) == noted, "the note replicated")
        copy.replicaof("NO", "ONE")  # the failover: the replica is the primary now
    finally:
        copy.close()
    after = backend_at(replica, key_prefix)
    hold = ReapHold(after.settings.renewal_s)
    hold.run(after)
    assert hold.held.startswith("a new Redis server (restarted or failed over), first seen 0.")
    assert after.broker.ms_since_server_seen() < hold.hold_s * 1000
