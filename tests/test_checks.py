"""System checks: each Redis setting that puts tasks at risk gives its error or warning."""

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.checks import Error, Warning
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from tests.servers.redis_server import free_port, redis_process

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
        yield server.url, [message.id for message in backend.check()]


def test_safe_server_passes() -> None:
    with checked_server("--appendonly", "yes", "--maxmemory-policy", "noeviction") as (_, ids):
        assert ids == []


def test_rdb_snapshots_count_as_persistence() -> None:
    with checked_server("--save", "900 1") as (_, ids):
        assert ids == []


def test_persistence_off_warns() -> None:
    with redis_process() as server, backend_at(server.url, "tmcheck") as backend:
        [message] = backend.check()
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
        [message] = backend.check()
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
        [message] = backend.check()
    assert isinstance(message, Warning)
    assert message.id == "threadmill.W002"
    assert message.msg == (
        f"TASKS['default'] at {server.url}: maxmemory-policy is {policy!r}, so Redis may evict "
        "finished results before result_ttl."
    )


def test_both_problems_are_reported_together() -> None:
    with checked_server("--maxmemory-policy", "allkeys-lru") as (_, ids):
        assert ids == ["threadmill.E003", "threadmill.W001"]


def test_unreachable_redis_is_an_error(key_prefix: str) -> None:
    location = f"redis://127.0.0.1:{free_port()}/0"
    with backend_at(location, key_prefix) as backend:
        [message] = backend.check()
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
            [message] = backend.check()
    assert message.id == "threadmill.E004"
    assert "refused the credentials" in message.msg
    assert "wrong-one" not in message.msg
    assert f"redis://:***@127.0.0.1:{server.port}/0" in message.msg


def test_manage_py_check_runs_the_backend_checks() -> None:
    with (
        redis_process("--maxmemory-policy", "allkeys-lru") as server,
        backend_at(server.url, "tmcheck"),
        pytest.raises(SystemCheckError, match=r"threadmill\.E003"),
    ):
        call_command("check")
