"""The worker and the reaper of one TASKS alias judge only that alias's Redis at start.

A project with two aliases, "default" and "bulk", each on a Redis of its own: "default"'s Redis
refuses the credentials (a password being rotated there). Before, ``threadmill_worker --backend
bulk`` and ``threadmill_reap --backend bulk`` ran the Redis checks of every alias at start, so
they stopped on "default"'s ``threadmill.E004`` with exit code 4, the code a service manager is
told never to restart (docs/deploy.md, systemd: RestartPreventExitStatus=4): the bulk tasks
waited until someone fixed another Redis and started the bulk workers again by hand.
"""

import textwrap
from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from django_threadmill.compat import TaskResultStatus, task_backends
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command

# manage.py with argv[1:], its TASKS given a "bulk" alias at BULK_URL beside "default" at
# REDIS_URL, with the same OPTIONS.
TWO_ALIASES = textwrap.dedent(
    """
    import os
    import sys

    from django.core.management import execute_from_command_line

    from testproject import settings

    settings.TASKS["bulk"] = {**settings.TASKS["default"], "LOCATION": os.environ["BULK_URL"]}
    execute_from_command_line(["manage.py", *sys.argv[1:]])
    """
)


@pytest.fixture(scope="module")
def refusing_redis() -> Iterator[RedisProcess]:
    """A Redis with a password LOCATION does not give: every call of "default" is refused."""
    with redis_process() as server:
        admin = redis.Redis.from_url(server.url)
        admin.config_set("requirepass", "not-in-location")
        admin.close()
        yield server


@pytest.fixture
def bulk_beside_default(redis_url: str, key_prefix: str) -> Iterator[None]:
    """This process's TASKS: "bulk" on the test's Redis beside "default"."""
    tasks = tasks_setting(redis_url, key_prefix)
    with override_settings(TASKS={**tasks, "bulk": tasks["default"]}):
        yield


def command_of_bulk(
    refusing_redis: RedisProcess, redis_url: str, key_prefix: str, *args: str
) -> tuple[int, str]:
    """Run a command with "default" on the refusing Redis and "bulk" on the test's; return its
    exit code and log."""
    command = Command(
        refusing_redis.url,
        key_prefix,
        *args,
        "--backend",
        "bulk",
        code=TWO_ALIASES,
        extra_env={"BULK_URL": redis_url},
    )
    try:
        return command.wait(60), command.log
    finally:
        command.close()


def test_a_worker_of_one_alias_starts_and_runs_its_tasks_while_another_aliass_redis_refuses(
    refusing_redis: RedisProcess,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    bulk_beside_default: None,
) -> None:
    result = echo.using(backend="bulk").enqueue(7)
    code, log = command_of_bulk(
        refusing_redis, redis_url, key_prefix, "threadmill_worker", "--processes", "0", "--burst"
    )
    assert code == 0, log
    assert "TASKS['default']" not in log
    read = task_backends["bulk"].get_result(result.id)
    assert read.status == TaskResultStatus.SUCCESSFUL
    assert read.return_value == 7


def test_a_reaper_of_one_alias_passes_while_another_aliass_redis_refuses(
    refusing_redis: RedisProcess, redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    code, log = command_of_bulk(refusing_redis, redis_url, key_prefix, "threadmill_reap", "--once")
    assert code == 0, log
    assert "TASKS['default']" not in log
    assert "Settled queue=default released=0" in log
