"""Refused credentials or ACL rights stop the worker and the reaper at start.

Waiting cannot fix a password, so neither command retries it the way it waits out a Redis that
is down (tests/faults/test_redis_down_at_start.py covers that case).
"""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, server_version
from tests.support import Command, wait_until, worker

from .test_auth_acl import ADMIN_PASSWORD, APP_PASSWORD, APP_RULES, location, locked_redis

__all__ = ["locked_redis"]  # the module-scoped fixture, shared with test_auth_acl


@pytest.fixture
def read_only_url(locked_redis: RedisProcess, key_prefix: str) -> Iterator[str]:
    """An ACL user that may read this backend's keys but write none of them."""
    admin = redis.Redis.from_url(location(locked_redis, "default", ADMIN_PASSWORD))
    # Redis 6.2 has no read-only key patterns (%R~, Redis 7): its reader may run no write.
    if server_version()[1] >= (7, 0):
        rules: tuple[str, ...] = (f"%R~{key_prefix}:*",)
    else:
        rules = (f"~{key_prefix}:*", "-@write")
    admin.execute_command("ACL", "SETUSER", "reader", *APP_RULES, *rules)
    yield location(locked_redis, "reader", APP_PASSWORD)
    admin.acl_deluser("reader")
    admin.close()


def finished(command: Command) -> str:
    """Wait for ``command`` to stop with exit code 4 (REFUSED: no restart can help); its log."""
    try:
        assert command.wait(60) == 4, command.log
        return command.log
    finally:
        command.close()


@pytest.mark.parametrize("password", ["", "wrong-password"])
def test_worker_stops_at_start_on_refused_credentials(
    locked_redis: RedisProcess, key_prefix: str, password: str
) -> None:
    url = f"redis://:{password}@127.0.0.1:{locked_redis.port}/0" if password else locked_redis.url
    log = finished(worker(url, key_prefix))
    assert "threadmill.E004" in log
    assert "Put the right user and password in LOCATION" in log
    assert "retrying" not in log
    assert password == "" or password not in log


def test_reaper_stops_at_start_on_refused_credentials(
    locked_redis: RedisProcess, key_prefix: str
) -> None:
    log = finished(Command(locked_redis.url, key_prefix, "threadmill_reap"))
    assert "threadmill.E004" in log
    assert "refused the credentials (Authentication required.)" in log


def test_worker_process_without_write_rights_stops_the_supervisor(
    read_only_url: str, key_prefix: str
) -> None:
    """The checks only read; the first write a process makes is refused, and nothing restarts."""
    command = worker(read_only_url, key_prefix, "--processes", "2")
    log = finished(command)
    assert "Redis refused this worker, stopping error=Redis at" in log
    assert "refused a command for lack of permission" in log
    assert command.process.returncode == 4
    assert "Worker process died" not in log


def test_reaper_without_rights_on_the_keys_stops(
    locked_redis: RedisProcess, key_prefix: str
) -> None:
    admin = redis.Redis.from_url(location(locked_redis, "default", ADMIN_PASSWORD))
    admin.execute_command("ACL", "SETUSER", "stranger", *APP_RULES, "~elsewhere:*")
    try:
        url = location(locked_redis, "stranger", APP_PASSWORD)
        log = finished(Command(url, key_prefix, "threadmill_reap"))
    finally:
        admin.acl_deluser("stranger")
        admin.close()
    assert "threadmill.E004" in log
    assert "refused a command for lack of permission" in log


def test_rights_revoked_under_a_running_worker_stop_it_with_exit_4(
    locked_redis: RedisProcess, key_prefix: str
) -> None:
    """It once retried "Fetch failed ... permission" for good, reported healthy all along."""
    admin = redis.Redis.from_url(location(locked_redis, "default", ADMIN_PASSWORD))
    admin.execute_command("ACL", "SETUSER", "app", *APP_RULES, f"~{key_prefix}:*")
    url = location(locked_redis, "app", APP_PASSWORD)
    command = worker(url, key_prefix)
    try:
        wait_until(lambda: "Worker process started" in command.log, "the worker started")
        admin.execute_command("ACL", "SETUSER", "app", "-@scripting")
        backend = ThreadmillTaskBackend(
            "default", {"LOCATION": locked_redis.url.replace("redis://", f"redis://:{ADMIN_PASSWORD}@"),
                        "OPTIONS": {"key_prefix": key_prefix}}
        )  # fmt: skip
        backend.enqueue(echo, [1], {})  # wakes the worker, whose next acquire is refused
        log = finished(command)
    finally:
        admin.acl_deluser("app")
        admin.close()
    assert "Redis refused this worker, stopping error=Redis at" in log
