"""Redis at maxmemory with noeviction: enqueue raises a clear error, the worker still acks."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.scripts import ScriptName, script_source, supports_script_flags
from django_threadmill.exceptions import BrokerUnavailable
from tests.servers.redis_server import RedisProcess, redis_process, server_version
from tests.support import worker

from . import tasks
from .support import all_successful, enqueue_counted, executions

FILLER_BYTES = 64 * 1024  # one filler value; Redis is filled with these until it refuses
# Only scripts flagged allow-oom may write at maxmemory, and Redis 6.2 has no script flags: there
# it refuses the settling scripts too, and acks wait for memory (docs/reliability.md).
needs_script_flags = pytest.mark.skipif(
    server_version()[1] < (7, 0),
    reason="Redis 6.2 has no script flags (allow-oom): at maxmemory it refuses acks too",
)


@pytest.fixture(scope="module")
def small_redis() -> Iterator[RedisProcess]:
    with redis_process("--maxmemory-policy", "noeviction") as server:
        yield server


@pytest.fixture
def redis_url(small_redis: RedisProcess) -> str:
    return small_redis.url


def fill_to_the_brim(client: redis.Redis) -> None:
    """Write 4 MB of filler, then cap maxmemory 1 MB below what is used: Redis is full."""
    for n in range(64):
        client.set(f"filler:{n}", b"x" * FILLER_BYTES)
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used - 2**20)


@pytest.fixture
def full_redis(redis_client: redis.Redis) -> Iterator[redis.Redis]:
    yield redis_client
    redis_client.config_set("maxmemory", 0)
    for key in redis_client.scan_iter("filler:*", count=1000):
        redis_client.delete(key)


@needs_script_flags
def test_enqueue_raises_and_worker_acks_when_redis_is_full(
    backend: ThreadmillTaskBackend,
    full_redis: redis.Redis,
    small_redis: RedisProcess,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    results = enqueue_counted(backend, log, 200)
    fill_to_the_brim(full_redis)

    with pytest.raises(BrokerUnavailable, match=r"is out of memory \(.*\)\. Raise maxmemory"):
        tasks.count_run.enqueue(str(log))

    command = worker(small_redis.url, key_prefix, "--threads", "4", "--burst")
    try:
        assert command.wait(60) == 0, command.log
    finally:
        command.close()
    assert all_successful(results)
    assert executions(log) == {result.id: 1 for result in results}
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        full_redis.set("filler:still-full", b"x" * FILLER_BYTES)


def test_only_scripts_that_settle_work_may_run_while_full(backend: ThreadmillTaskBackend) -> None:
    """Redis 7+ gets the allow-oom flag on settling scripts, on progress, which rides the
    finish calls, and on pace, which lets reserved tasks start; work-adding ones stay
    refusable."""
    assert supports_script_flags(backend.broker.client) is (server_version()[1] >= (7, 0))
    flagged = {
        name
        for name in ScriptName
        if script_source(name, flags=True).startswith("#!lua flags=allow-oom\n")
    }
    settling = {"start", "finish", "metrics", "renew", "release", "reap", "cancel", "purge"}
    settling.add("set_aside")  # takes reserved tasks whose reply did not decode out of leases
    settling.add("set_aside_expired")  # and expired ones whose reap reply did not
    settling.add("sign_off")  # a stopping process, else counted live for a lease
    settling.add("server_seen")  # a reaper's note of a new server, else no pass settles
    assert flagged == settling | {"progress", "pace"}
    assert not any(script_source(name).startswith("#!") for name in ScriptName)
