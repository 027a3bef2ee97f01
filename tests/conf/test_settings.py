"""conf.py: LOCATION and OPTIONS are read once, with a clear error for anything unusable."""

import re
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.conf.settings import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_PAYLOAD_BYTES,
    BackendSettings,
    read_settings,
)
from testproject.example.tasks import echo
from tests.backend_support import redis_with_password
from tests.conftest import tasks_setting
from tests.servers.redis_server import free_port, redis_process


def options(**values: object) -> BackendSettings:
    return read_settings("default", {"OPTIONS": values})


def test_defaults() -> None:
    settings = read_settings("default", {})
    assert settings == BackendSettings(alias="default")
    assert settings.location == "redis://127.0.0.1:6379/0"
    assert (settings.key_prefix, settings.lease_ttl_s, settings.result_ttl_s) == ("tm", 60, 86400)
    assert settings.max_payload_bytes == DEFAULT_MAX_PAYLOAD_BYTES


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(timedelta(minutes=2), 120.0), (timedelta(milliseconds=1250), 1.25), (30, 30.0), (1.5, 1.5)],
)
def test_durations_take_seconds_or_timedelta(value: object, seconds: float) -> None:
    settings = options(lease_ttl=value, result_ttl=value, socket_timeout=value)
    assert (settings.lease_ttl_s, settings.result_ttl_s, settings.socket_timeout_s) == (
        seconds,
        seconds,
        seconds,
    )
    assert settings.lease_ttl_ms == int(seconds * 1000)


def test_optional_durations_take_none() -> None:
    settings = options(result_ttl=None, socket_timeout=None, socket_connect_timeout=None)
    assert settings.result_ttl_ms is None
    assert (settings.socket_timeout_s, settings.socket_connect_timeout_s) == (None, None)


@pytest.mark.parametrize("value", [0, -5, "60", True, None, timedelta(0), [60]])
def test_bad_lease_ttl(value: object) -> None:
    shown = repr(value.total_seconds() if isinstance(value, timedelta) else value)
    message = f"OPTIONS['lease_ttl'] is {shown}. Use a positive number of seconds or a timedelta."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(lease_ttl=value)


@pytest.mark.parametrize("name", ["result_ttl", "socket_timeout", "socket_connect_timeout"])
def test_bad_optional_duration_mentions_none(name: str) -> None:
    message = f"OPTIONS[{name!r}] is -1. Use a positive number of seconds or a timedelta or None."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(**{name: -1})


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_durations_must_be_finite(value: float) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"OPTIONS\['lease_ttl'\] is (nan|inf)\."):
        options(lease_ttl=value)


@pytest.mark.parametrize("name", ["max_payload_bytes", "max_connections"])
@pytest.mark.parametrize("value", [0, -1, 1.5, "10", False, None])
def test_bad_counts(name: str, value: object) -> None:
    message = f"OPTIONS[{name!r}] is {value!r}. Use a positive whole number."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(**{name: value})


BYTES = "Redis takes no string past 512 MB (proto-max-bulk-len)"
# option -> (the largest it takes, why)
COUNT_BOUNDS = {
    "max_payload_bytes": (512 * 1024 * 1024, BYTES),
    "max_result_bytes": (512 * 1024 * 1024, BYTES),
    "max_connections": (
        10_000,
        "Redis serves 10000 clients by default (maxclients), and redis-py's pool sets aside a "
        "slot for each connection when it is made",
    ),
}


@pytest.mark.parametrize("name", sorted(COUNT_BOUNDS))
def test_counts_past_their_bound_are_refused_and_the_bound_is_taken(name: str) -> None:
    """10**20 connections held manage.py check --deploy for good: redis-py's blocking pool fills
    a queue with a slot per connection when it is made."""
    most, why = COUNT_BOUNDS[name]
    for value in (most + 1, 10**20):
        message = f"OPTIONS[{name!r}] is {value}, above {most}. Use at most {most}: {why}."
        with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
            options(**{name: value})
    assert getattr(options(**{name: most}), name) == most


def test_counts_are_read() -> None:
    settings = options(max_payload_bytes=2048, max_connections=8)
    assert (settings.max_payload_bytes, settings.max_connections) == (2048, 8)


def test_pool_and_enqueue_options() -> None:
    defaults = read_settings("default", {})
    assert (defaults.max_connections, defaults.pool_timeout_s) == (DEFAULT_MAX_CONNECTIONS, 10.0)
    assert defaults.enqueue_on_commit is False
    settings = options(pool_timeout=timedelta(seconds=3), enqueue_on_commit=True)
    assert (settings.pool_timeout_s, settings.enqueue_on_commit) == (3.0, True)


@pytest.mark.parametrize("value", [None, 0, "1"])
def test_bad_pool_timeout(value: object) -> None:
    message = (
        f"OPTIONS['pool_timeout'] is {value!r}. Use a positive number of seconds or a timedelta."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(pool_timeout=value)


@pytest.mark.parametrize("value", [None, 1, "yes"])
def test_bad_enqueue_on_commit(value: object) -> None:
    message = f"OPTIONS['enqueue_on_commit'] is {value!r}. Use True or False."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(enqueue_on_commit=value)


@pytest.mark.parametrize("value", ["", "a{b}", "has space", "x" * 65, 7])
def test_bad_key_prefix(value: object) -> None:
    message = (
        f"OPTIONS['key_prefix'] is {value!r}. Use 1-64 letters, digits or '_.:-' "
        "(no braces: the prefix sits outside the Redis Cluster hash tag)."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(key_prefix=value)


def test_key_prefix_may_have_colons() -> None:
    assert options(key_prefix="app:tasks-1.0").key_prefix == "app:tasks-1.0"


def test_unknown_option_lists_the_known_ones() -> None:
    with pytest.raises(
        ImproperlyConfigured,
        match=r"^Unknown OPTIONS key 'lease' for ThreadmillTaskBackend\. Known keys: .*lease_ttl",
    ):
        options(lease=30)


@pytest.mark.parametrize("key", ["result_tll", "RESULT_TTL", "reslt_ttl"])
def test_a_misspelt_option_is_named_with_the_one_meant(key: str) -> None:
    """It listed the 20 known keys alone: the one meant was left to find among them."""
    with pytest.raises(
        ImproperlyConfigured,
        match=rf"^Unknown OPTIONS key '{key}' for ThreadmillTaskBackend\. Did you mean "
        r"'result_ttl'\? Known keys: ",
    ):
        options(**{key: 60})


def test_connection_options_must_be_a_dict() -> None:
    message = (
        "OPTIONS['connection_options'] is ['x']. Use a dict of keyword arguments for "
        "redis.BlockingConnectionPool.from_url()."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(connection_options=["x"])


@pytest.mark.parametrize("value", ["short", 12345678901234567890, None])
def test_metrics_token_must_be_a_long_string(value: object) -> None:
    message = (
        "OPTIONS['metrics_token'] must be a string of at least 16 characters (e.g. "
        "secrets.token_urlsafe()); leave it out to allow staff users only."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        options(metrics_token=value)


def test_metrics_token_stays_out_of_repr() -> None:
    assert "tok" not in repr(options(metrics_token="tok" * 8))


def test_options_must_be_a_dict() -> None:
    message = "TASKS['default']['OPTIONS'] is [('lease_ttl', 5)]. Use a dict."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"OPTIONS": [("lease_ttl", 5)]})


@pytest.mark.parametrize(
    "location",
    ["redis://h:6379/0", "rediss://user:secret@h:6380/1", "unix:///run/redis.sock?db=2"],
)
def test_redis_url_schemes_are_accepted(location: str) -> None:
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize("location", ["localhost:6379", "http://h:6379", "", None, 6379])
def test_other_locations_are_refused(location: object) -> None:
    message = (
        f"TASKS['default']['LOCATION'] is {location!r}. Use a Redis URL such as "
        "'redis://localhost:6379/0', 'rediss://user:password@host:6380/0' or "
        "'unix:///run/redis.sock'."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


def test_bad_options_surface_when_the_backend_is_built(redis_url: str, key_prefix: str) -> None:
    with (
        override_settings(TASKS=tasks_setting(redis_url, key_prefix, lease_ttl="soon")),
        pytest.raises(ImproperlyConfigured, match=r"OPTIONS\['lease_ttl'\] is 'soon'"),
    ):
        task_backends["default"]


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"client_name": "tm-test"}}])
def test_connection_options_reach_redis(backend: ThreadmillTaskBackend) -> None:
    assert backend.broker.client.client_getname() == "tm-test"


def test_unix_socket_location(key_prefix: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tm-sock-") as directory:
        socket_path = Path(directory) / "redis.sock"
        with (
            redis_process("--unixsocket", str(socket_path)),
            override_settings(TASKS=tasks_setting(f"unix://{socket_path}?db=3", key_prefix)),
        ):
            result = echo.enqueue("over a socket")
            assert echo.get_result(result.id).status == TaskResultStatus.READY


def test_password_in_location(key_prefix: str) -> None:
    with (
        redis_with_password("s3cret") as server,
        override_settings(TASKS=tasks_setting(server.url, key_prefix)),
    ):
        result = echo.enqueue("authenticated")
        assert echo.get_result(result.id).args == ["authenticated"]


def test_backend_is_built_without_touching_redis(key_prefix: str) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(TASKS=tasks_setting(closed, key_prefix)):
        backend = task_backends["default"]
        assert backend.settings.location == closed
        assert echo.using(priority=7, queue_name="emails").priority == 7  # validated offline
