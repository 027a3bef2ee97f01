"""System checks: each Redis setting that puts tasks at risk gives its error or warning, where
Redis matters (check --deploy, check --tag threadmill, the worker and the reaper at start);
commands that need no Redis work with it down."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.core.checks import Error, Warning
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.compat import task_backends
from tests.servers.redis_server import free_port, redis_process
from tests.support import Command, run_to_completion

from .backend_support import redis_with_password
from .conftest import tasks_setting


@contextmanager
def backend_at(location: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    with override_settings(TASKS=tasks_setting(location, key_prefix, socket_connect_timeout=2)):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        yield backend


@contextmanager
def checked_server(*redis_args: str) -> Iterator[tuple[str, list[str]]]:
    """Yield a throwaway server's URL and the check ids its settings raise."""
    with redis_process(*redis_args) as server, backend_at(server.url, "tmcheck") as backend:
        yield server.url, [message.id for message in check_redis(backend)]


def test_safe_server_passes() -> None:
    with checked_server("--appendonly", "yes", "--maxmemory-policy", "noeviction") as (_, ids):
        assert ids == []


def test_rdb_snapshots_count_as_persistence() -> None:
    # Each of the rule's numbers an argument of its own: Redis 6.2 ignored "900 1" as one.
    with checked_server("--save", "900", "1") as (_, ids):
        assert ids == []


def test_persistence_off_warns() -> None:
    with redis_process() as server, backend_at(server.url, "tmcheck") as backend:
        [message] = check_redis(backend)
    assert isinstance(message, Warning)
    assert message.id == "threadmill.W001"
    assert message.msg == (
        f"TASKS['default'] at {server.url}: persistence is off (no AOF, no RDB snapshots): a "
        "Redis restart loses every queued task and result."
    )
    assert message.hint == (
        "Enable 'appendonly yes' (with appendfsync everysec or always) in redis.conf."
    )


def test_allkeys_eviction_is_an_error() -> None:
    with (
        redis_process("--appendonly", "yes", "--maxmemory-policy", "allkeys-lru") as server,
        backend_at(server.url, "tmcheck") as backend,
    ):
        [message] = check_redis(backend)
    assert isinstance(message, Error)
    assert message.id == "threadmill.E003"
    assert message.msg == (
        f"TASKS['default'] at {server.url}: maxmemory-policy is 'allkeys-lru', so Redis may "
        "evict queued tasks."
    )
    assert message.hint == (
        "Set 'maxmemory-policy noeviction' in redis.conf (CONFIG SET works too)."
    )


@pytest.mark.parametrize("policy", ["allkeys-lfu", "allkeys-random"])
def test_every_allkeys_policy_is_an_error(policy: str) -> None:
    with checked_server("--appendonly", "yes", "--maxmemory-policy", policy) as (_, ids):
        assert ids == ["threadmill.E003"]


@pytest.mark.parametrize(
    "policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"]
)
def test_volatile_eviction_warns(policy: str) -> None:
    with (
        redis_process("--appendonly", "yes", "--maxmemory-policy", policy) as server,
        backend_at(server.url, "tmcheck") as backend,
    ):
        [message] = check_redis(backend)
    assert isinstance(message, Warning)
    assert message.id == "threadmill.W002"
    assert message.msg == (
        f"TASKS['default'] at {server.url}: maxmemory-policy is {policy!r}, so Redis may evict "
        "what expires: finished results before result_ttl, and unique tasks' claims (an equal "
        "enqueue then stores a second task)."
    )


def test_both_problems_are_reported_together() -> None:
    with checked_server("--maxmemory-policy", "allkeys-lru") as (_, ids):
        assert ids == ["threadmill.E003", "threadmill.W001"]


def test_unreachable_redis_is_an_error(key_prefix: str) -> None:
    location = f"redis://127.0.0.1:{free_port()}/0"
    with backend_at(location, key_prefix) as backend:
        [message] = check_redis(backend)
    assert isinstance(message, Error)
    assert message.id == "threadmill.E001"
    assert re.fullmatch(
        rf"TASKS\['default'\] at {re.escape(location)}: Redis is not usable: Redis at "
        rf"{re.escape(location)} is unreachable \(.+\)\. Start Redis or fix TASKS LOCATION; "
        r"nothing was written\.",
        message.msg,
    )
    assert message.hint == "Start Redis, or fix LOCATION (host, port, user, password)."


def test_wrong_password_is_an_error_without_the_password(key_prefix: str) -> None:
    with redis_with_password("right-one") as server:
        location = f"redis://:wrong-one@127.0.0.1:{server.port}/0"
        with backend_at(location, key_prefix) as backend:
            [message] = check_redis(backend)
    assert message.id == "threadmill.E004"
    assert "refused the credentials" in message.msg
    assert "wrong-one" not in message.msg
    assert f"redis://:***@127.0.0.1:{server.port}/0" in message.msg


@pytest.mark.parametrize("asked", [["--tag", "threadmill"], ["--deploy"]])
def test_manage_py_check_reads_redis_when_asked(asked: list[str]) -> None:
    with (
        redis_process("--maxmemory-policy", "allkeys-lru") as server,
        backend_at(server.url, "tmcheck"),
        pytest.raises(SystemCheckError, match=r"threadmill\.E003"),
    ):
        call_command("check", *asked)


def test_plain_manage_py_check_reads_no_redis() -> None:
    with (
        redis_process("--maxmemory-policy", "allkeys-lru") as server,
        backend_at(server.url, "tmcheck"),
    ):
        call_command("check")


@pytest.mark.parametrize("command", [["check"], ["migrate", "--noinput"]])
def test_commands_that_need_no_redis_work_with_redis_down(
    command: list[str], key_prefix: str, tmp_path: Path
) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    database = {"THREADMILL_DB": str(tmp_path / "db.sqlite3")}
    run_to_completion(Command(down, key_prefix, *command, extra_env=database))


def test_check_tag_threadmill_with_redis_down_names_it(key_prefix: str) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"
    check = Command(down, key_prefix, "check", "--tag", "threadmill")
    try:
        assert check.wait() == 1
        assert f"(threadmill.E001) TASKS['default'] at {down}: Redis is not usable" in check.log
    finally:
        check.close()


def test_a_backend_without_the_app_installed_names_the_fix() -> None:
    without = [app for app in settings.INSTALLED_APPS if app != "django_threadmill"]
    with (
        override_settings(INSTALLED_APPS=without),
        pytest.raises(SystemCheckError) as raised,
    ):
        call_command("check")
    assert (
        "(threadmill.E007) TASKS['default'] uses ThreadmillTaskBackend, but 'django_threadmill' "
        "is not in INSTALLED_APPS: there is no threadmill_worker or threadmill_reap command, no "
        "admin section, and no check of its Redis.\n\tHINT: Add 'django_threadmill' to "
        "INSTALLED_APPS."
    ) in str(raised.value)


def test_queue_limits_naming_a_queue_not_in_queues_is_an_error(
    redis_url: str, key_prefix: str
) -> None:
    limits = {"emials": {"concurrency": 2}, "emails": {"rate": "10/s"}}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, queue_limits=limits)):
        [message] = task_backends["default"].check()
    assert isinstance(message, Error)
    assert message.id == "threadmill.E008"
    assert message.msg == (
        "TASKS['default']: OPTIONS['queue_limits'] names queue 'emials', which is not in QUEUES "
        "(default, emails and reports), so its limits apply to no task."
    )
    assert message.hint == "Fix the queue name, or add the queue to TASKS['default']['QUEUES']."


@pytest.mark.parametrize(
    ("config", "name"),
    [
        (("--proto-max-bulk-len", "1mb"), "proto-max-bulk-len"),
        (("--client-query-buffer-limit", "32mb"), "client-query-buffer-limit"),
    ],
)
def test_redis_limits_below_what_a_finish_call_carries_warn(
    config: tuple[str, str], name: str
) -> None:
    """A 2 MB result against proto-max-bulk-len 1mb failed its finish call for good, holding
    up the ack writer (tests/worker/test_result_past_proto_max_bulk_len.py); it now ends its
    task FAILED, which the warning says ahead."""
    with (
        redis_process("--appendonly", "yes", *config) as server,
        backend_at(server.url, "tmcheck") as backend,
    ):
        [message] = check_redis(backend)
    assert isinstance(message, Warning)
    assert message.id == "threadmill.W006"
    assert f"Redis takes nothing over {name} " in message.msg
    assert "a task returning more would end FAILED, Redis refusing its result" in message.msg
    assert message.hint == (
        f"Raise {name} in redis.conf, or lower OPTIONS['max_result_bytes'] below it."
    )
