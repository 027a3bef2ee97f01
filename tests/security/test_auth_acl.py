"""Redis AUTH and ACL users: a password in LOCATION works, an ACL user stays in its prefix."""

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command

from . import tasks

ADMIN_PASSWORD = "admin-pw-9f3c"
APP_PASSWORD = "app-pw-71d2"
# What a django-threadmill user needs: its own keys, and every command but the dangerous ones,
# plus INFO (the worker logs the Redis version and the checks read persistence settings).
APP_RULES = ("on", f">{APP_PASSWORD}", "resetchannels", "+@all", "-@dangerous", "+info")


@pytest.fixture(scope="module")
def locked_redis() -> Iterator[RedisProcess]:
    with redis_process() as server:
        admin = redis.Redis.from_url(server.url)
        admin.config_set("requirepass", ADMIN_PASSWORD)
        admin.close()
        yield server


def location(server: RedisProcess, user: str, password: str) -> str:
    return f"redis://{user}:{password}@127.0.0.1:{server.port}/0"


@pytest.fixture
def admin(locked_redis: RedisProcess) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(location(locked_redis, "default", ADMIN_PASSWORD))
    yield client
    client.close()


@pytest.fixture(params=["password", "acl-user"])
def redis_url(
    request: pytest.FixtureRequest, locked_redis: RedisProcess, admin: redis.Redis, key_prefix: str
) -> str:
    """LOCATION with the default user's password, or with an ACL user kept to the prefix."""
    if request.param == "password":
        return location(locked_redis, "default", ADMIN_PASSWORD)
    admin.acl_setuser("app", reset=True)
    admin.execute_command("ACL", "SETUSER", "app", *APP_RULES, f"~{key_prefix}:*")
    return location(locked_redis, "app", APP_PASSWORD)


def run_burst(url: str, key_prefix: str, *args: str) -> str:
    command = Command(url, key_prefix, *args)
    try:
        assert command.wait(60) == 0, command.log
        return command.log
    finally:
        command.close()


def test_tasks_run_with_credentials_that_are_never_logged(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    result = tasks.touch.enqueue(str(tmp_path / "ran"))
    log = run_burst(redis_url, key_prefix, "threadmill_worker", "--processes", "1", "--burst")
    log += run_burst(redis_url, key_prefix, "threadmill_reap", "--once")
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    password = urlsplit(redis_url).password or ""
    assert password not in log


def test_acl_user_cannot_reach_other_keys(locked_redis: RedisProcess, admin: redis.Redis) -> None:
    admin.execute_command("ACL", "SETUSER", "app", *APP_RULES, "~mine:*")
    app = redis.Redis.from_url(location(locked_redis, "app", APP_PASSWORD))
    try:
        app.set("mine:key", "1")
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.get("theirs:key")
    finally:
        app.close()


def test_acl_user_outside_its_prefix_gets_a_clear_error(
    locked_redis: RedisProcess, admin: redis.Redis, key_prefix: str
) -> None:
    """An ACL user whose key pattern does not cover key_prefix is told what to grant."""
    admin.execute_command("ACL", "SETUSER", "app", *APP_RULES, "resetkeys", "~elsewhere:*")
    url = location(locked_redis, "app", APP_PASSWORD)
    backend = ThreadmillTaskBackend("default", {"LOCATION": url, "QUEUES": ["default"],
                                                "OPTIONS": {"key_prefix": key_prefix}})  # fmt: skip
    with pytest.raises(BrokerUnavailable, match=r"refused a command for lack of permission"):
        backend.enqueue(tasks.touch, ["x"], {})
