"""threadmill_health on a primary that refuses every write for want of replicas (NOREPLICAS:
``min-replicas-to-write`` with no replica in sync).

Its workers renew nothing there, so their sightings go stale: the probe said "fewer worker
processes of this host" (exit 1), and a liveness probe (``--redis-down-ok``) had every worker
restarted, which brings no replica back. It is Redis that cannot serve (exit 3), as for a
read-only replica. A primary whose replica is in sync takes writes: its missing workers are
workers gone (exit 1).
"""

import subprocess
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.management.health import HealthCode
from tests.faults.test_a_primary_made_a_replica import SYNC_AT_ONCE, primary, redis_url
from tests.management.test_health import LEASE_TTL_S, Probe, probe_at, until_exit
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command, wait_until

__all__ = ["primary", "redis_url"]  # fixtures, for pytest


@pytest.fixture
def probe(primary: RedisProcess, key_prefix: str) -> Probe:
    return lambda *args: probe_at(primary.url, key_prefix, *args)


@pytest.fixture
def client(primary: RedisProcess) -> Iterator[redis.Redis]:
    with redis.Redis(port=primary.port, decode_responses=True) as opened:
        yield opened


def test_a_primary_refusing_writes_for_want_of_replicas_is_redis_not_the_workers(
    probe: Probe, client: redis.Redis, start_worker: Callable[..., Command]
) -> None:
    start_worker(lease_ttl_s=LEASE_TTL_S)
    until_exit(probe, HealthCode.HEALTHY)
    client.config_set("min-replicas-to-write", 1)  # no replica: every write is refused
    runs: list[subprocess.CompletedProcess[str]] = []
    wait_until(
        lambda: runs.append(probe()) or runs[-1].returncode != HealthCode.HEALTHY,
        "the probe turning unhealthy once the renewals went stale",
    )
    refused, passed = runs[-1], probe("--redis-down-ok")
    assert refused.returncode == HealthCode.UNREACHABLE, refused.stderr
    assert "NOREPLICAS" in refused.stderr, refused.stderr
    assert "Check its replicas" in refused.stderr
    assert "fewer worker processes" not in refused.stderr
    assert passed.returncode == HealthCode.HEALTHY, passed.stderr
    assert passed.stderr.startswith("Redis unavailable, passing (--redis-down-ok) host=")


def test_workers_gone_from_a_primary_whose_replica_is_in_sync_are_workers_gone(
    primary: RedisProcess, probe: Probe, client: redis.Redis
) -> None:
    client.config_set("min-replicas-to-write", 1)
    with redis_process(*SYNC_AT_ONCE, "--replicaof", "127.0.0.1", str(primary.port)):
        wait_until(
            lambda: client.info("replication").get("min_slaves_good_slaves") == 1,
            "the replica in sync",
        )
        gone = probe()
    assert gone.returncode == HealthCode.TOO_FEW, gone.stderr
    assert "fewer worker processes" in gone.stderr
