"""threadmill_health on a primary that holds every write back: a ``FAILOVER`` waiting for its
replica, or a ``CLIENT PAUSE WRITE`` where INFO shows one (``paused_actions``, Valkey 8.1+).

Its workers cannot renew meanwhile, so once that lasted past lease_ttl the probe said "fewer
worker processes of this host" (exit 1), and a liveness probe (``--redis-down-ok``) had every
worker restarted, which ends no failover. It is Redis that cannot serve now (exit 3), as for a
read-only replica. Redis 7's INFO does not show a CLIENT PAUSE: there, such a pause still
reads as too few (docs/deploy.md, Health).
"""

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.management.health import HealthCode
from tests.management.test_health import LEASE_TTL_S, Probe, probe_at, until_exit
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command, wait_until

SYNC_AT_ONCE = ("--repl-diskless-sync-delay", "0")  # a replica is synced without a 5 s wait
FAILOVER_TIMEOUT_MS = 600_000  # the failover waits this long for the replica; aborted sooner
PASSED = "Redis unavailable, passing (--redis-down-ok) host="


@pytest.fixture
def primary() -> Iterator[RedisProcess]:
    with redis_process(*SYNC_AT_ONCE) as started:
        yield started


@pytest.fixture
def redis_url(primary: RedisProcess) -> str:
    return primary.url  # the test holds its writes back


@pytest.fixture
def client(primary: RedisProcess) -> Iterator[redis.Redis]:
    with redis.Redis(port=primary.port, decode_responses=True) as opened:
        yield opened


@pytest.fixture
def replica(primary: RedisProcess, client: redis.Redis) -> Iterator[RedisProcess]:
    """A replica of ``primary``, in sync."""
    with redis_process(*SYNC_AT_ONCE, "--replicaof", "127.0.0.1", str(primary.port)) as started:
        wait_until(
            lambda: client.info("replication").get("slave0", {}).get("state") == "online",
            "the replica in sync",
        )
        yield started


@pytest.fixture
def probe(primary: RedisProcess, key_prefix: str) -> Probe:
    return lambda *args: probe_at(primary.url, key_prefix, *args)


def failover_waiting(client: redis.Redis, replica: RedisProcess) -> None:
    """Start a FAILOVER to ``replica`` that waits for it to catch up, which it cannot (it is
    stopped and the primary has taken a write since): every write is held back meanwhile."""
    assert replica.process is not None
    os.kill(replica.process.pid, signal.SIGSTOP)
    client.set("written-after-the-replica-stopped", "1")
    client.execute_command("FAILOVER", "TIMEOUT", FAILOVER_TIMEOUT_MS)
    wait_until(
        lambda: client.info("replication")["master_failover_state"] == "waiting-for-sync",
        "the failover waiting for the replica",
    )


def failover_aborted(client: redis.Redis, replica: RedisProcess) -> None:
    assert replica.process is not None
    try:
        client.execute_command("FAILOVER", "ABORT")
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)


def test_a_failover_holding_writes_back_past_lease_ttl_is_redis_not_the_workers(
    probe: Probe,
    client: redis.Redis,
    replica: RedisProcess,
    start_worker: Callable[..., Command],
) -> None:
    start_worker(lease_ttl_s=LEASE_TTL_S)
    until_exit(probe, HealthCode.HEALTHY)
    failover_waiting(client, replica)
    try:
        runs: list[subprocess.CompletedProcess[str]] = []
        wait_until(
            lambda: runs.append(probe()) or runs[-1].returncode != HealthCode.HEALTHY,
            "the probe turning unhealthy once the renewals went stale",
        )
        held, passed = runs[-1], probe("--redis-down-ok")
    finally:
        failover_aborted(client, replica)
    until_exit(probe, HealthCode.HEALTHY)  # the workers renew again once it is over

    assert held.returncode == HealthCode.UNREACHABLE, held.stderr
    assert (
        ": Redis holds every write back for a failover under way (FAILOVER, "
        "master_failover_state=waiting-for-sync), so no worker can renew its leases. It takes "
        "writes again once the failover is over, or aborted (its TIMEOUT, or FAILOVER ABORT); "
        "the workers renew then.\n"
    ) in held.stderr
    assert "fewer worker processes" not in held.stderr
    assert passed.returncode == HealthCode.HEALTHY, passed.stderr
    assert passed.stderr.startswith(PASSED), passed.stderr


@pytest.fixture
def pause_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Have INFO say what Valkey 8.1+ says during a CLIENT PAUSE WRITE (INFO clients)."""
    read = Broker.server_info

    def with_the_pause(self: Broker, **options: Any) -> dict[str, Any]:
        paused = {"paused_reason": "client_pause", "paused_actions": "write"}
        return {**read(self, **options), **paused, "paused_timeout_milliseconds": 52_000}

    monkeypatch.setattr(Broker, "server_info", with_the_pause)


@pytest.mark.usefixtures("pause_shown")
def test_a_pause_info_shows_is_redis_not_the_workers() -> None:
    with pytest.raises(CommandError) as held:
        call_command("threadmill_health", stdout=StringIO(), stderr=StringIO())
    passed = StringIO()
    call_command("threadmill_health", "--redis-down-ok", stdout=StringIO(), stderr=passed)

    assert held.value.returncode == HealthCode.UNREACHABLE
    assert str(held.value).endswith(
        ": Redis holds every write back (paused_actions=write, paused_reason=client_pause), so "
        "no worker can renew its leases. It takes writes again once the pause is over (CLIENT "
        "UNPAUSE, or its timeout: paused_timeout_milliseconds=52000); the workers renew then."
    )
    assert passed.getvalue().startswith(PASSED)
