"""Slow Redis (latency added by a TCP proxy): every task still runs once and is recorded."""

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from benchmarks.harness.proxy import ProxyLink, delay_proxy
from django_threadmill.backend import ThreadmillTaskBackend
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until, worker

from .support import enqueue_counted, executions, states

DELAY_S = 0.025  # each way: 50 ms round trips, about 100x a local Redis


@pytest.fixture(scope="module")
def slow_redis() -> Iterator[tuple[RedisProcess, ProxyLink]]:
    with redis_process() as server, delay_proxy(server.port, DELAY_S * 1000) as link:
        yield server, link


@pytest.fixture
def redis_url(slow_redis: tuple[RedisProcess, ProxyLink]) -> str:
    return slow_redis[1].url


def test_tasks_run_once_through_a_slow_link(
    backend: ThreadmillTaskBackend,
    slow_redis: tuple[RedisProcess, ProxyLink],
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    direct = redis.Redis.from_url(slow_redis[0].url, decode_responses=True)
    results = enqueue_counted(backend, log, 500)
    command = worker(redis_url, key_prefix, "--threads", "4", lease_ttl_s=2.0)
    try:
        # Poll through the proxy-free client: the test's own reads need no added latency.
        done = {"successful": len(results)}
        wait_until(lambda: states(direct, backend.broker, results) == done, "all SUCCESSFUL", 60)
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
        assert "Lease lost" not in command.log
    finally:
        command.close()
        direct.close()
    assert executions(log) == {result.id: 1 for result in results}
