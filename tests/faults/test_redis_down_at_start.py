"""Redis unreachable when the worker starts: it waits, says so in the log, then works."""

import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until, worker

from .support import all_successful, enqueue_counted, executions


@pytest.fixture
def late_redis() -> Iterator[RedisProcess]:
    """A Redis with a port and a directory, not started: the test starts it."""
    with tempfile.TemporaryDirectory(prefix="threadmill-redis-") as directory:
        server = RedisProcess(Path(directory), "--appendonly", "yes")
        try:
            yield server
        finally:
            server.kill()


@pytest.fixture
def redis_url(late_redis: RedisProcess) -> str:
    return late_redis.url


def test_worker_waits_for_redis_then_runs_tasks(
    backend: ThreadmillTaskBackend, late_redis: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    command = worker(late_redis.url, key_prefix, "--threads", "2")
    try:
        line = command.wait_for_log(
            r"Redis unavailable, retrying in [\d.]+s error=Redis at \S+ "
            r"is unreachable \(.*\)\. Start Redis or fix TASKS LOCATION"
        )
        assert "Connection refused" in line.group(0)
        command.wait_for_log(r"Redis unavailable, retrying in 0\.4s")  # backing off
        late_redis.start()
        command.wait_for_log("Worker process started")
        log = tmp_path / "runs.log"
        results = enqueue_counted(backend, log, 50)
        wait_until(lambda: all_successful(results), "every task SUCCESSFUL", 30)
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in results}


def test_reaper_waits_for_redis(late_redis: RedisProcess, key_prefix: str) -> None:
    reaper = Command(late_redis.url, key_prefix, "threadmill_reap", "--interval", "0.2")
    try:
        reaper.wait_for_log(r"Reap pass failed, retrying next interval error=.*is unreachable")
        late_redis.start()
        reaper.signal(signal.SIGTERM)
        assert reaper.wait(60) == 0, reaper.log
        assert "Reaper stopped" in reaper.log
    finally:
        reaper.close()
