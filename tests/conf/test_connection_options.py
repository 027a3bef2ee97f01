"""connection_options keys are checked against what redis-py's clients take, when settings are
read: an unknown one raised a bare TypeError at the first enqueue. Timeouts and the pool size in
it are judged as the options they override are."""

import asyncio
import re
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.conf.settings import BackendSettings, read_settings
from testproject.example.tasks import echo


def settings(
    location: str, connection_options: dict[object, object], **more: object
) -> BackendSettings:
    options = {"connection_options": connection_options, **more}
    return read_settings("default", {"LOCATION": location, "OPTIONS": options})


@pytest.mark.parametrize(
    ("location", "key", "close", "cluster"),
    [
        ("redis://h:6379/0", "client_nme", "client_name", False),
        ("rediss://h:6380/0", "ssl_cert_req", "ssl_cert_reqs", False),
        ("unix:///run/redis.sock", "socket_timout", "socket_timeout", False),
        ("redis://h:7000", "read_from_replica", "read_from_replicas", True),
    ],
)
def test_misspelt_key_names_the_close_one(
    location: str, key: str, close: str, cluster: bool
) -> None:
    client = "RedisCluster" if cluster else f"connection pools for {location.split(':')[0]}://"
    message = (
        f"OPTIONS['connection_options'] has {key!r}, which is no argument of both redis-py's "
        f"sync and asyncio {client}. Did you mean {close!r}?"
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        settings(location, {key: 1}, cluster=cluster)


@pytest.mark.parametrize(
    ("location", "key"),
    [
        ("redis://h:6379/0", "bogus"),
        ("redis://h:6379/0", "ssl_ca_certs"),  # a TLS argument: for rediss:// only
        ("unix:///run/redis.sock", "socket_keepalive"),  # a TCP argument
        ("rediss://h:6380/0", "ssl_validate_ocsp"),  # sync only: aenqueue would raise
        ("redis://h:6379/0", 7),
    ],
)
def test_unknown_key_lists_the_valid_ones(location: str, key: object) -> None:
    scheme = location.split(":")[0]
    pattern = (
        rf"^OPTIONS\['connection_options'\] has {re.escape(repr(key))}, which is no argument "
        rf"of both redis-py's sync and asyncio connection pools for {scheme}://\. "
        r"Use one of .*client_name, .*socket_timeout.*\.$"
    )
    with pytest.raises(ImproperlyConfigured, match=pattern):
        settings(location, {key: 1})


@pytest.mark.parametrize(
    ("location", "connection_options"),
    [
        ("redis://h:6379/0", {"client_name": "x", "health_check_interval": 5, "retry": None}),
        ("redis://h:6379/0", {"socket_keepalive": True, "protocol": 3, "timeout": 2}),
        ("rediss://h:6380/0", {"ssl_cert_reqs": "none", "ssl_ca_certs": "/ca.pem"}),
        ("unix:///run/redis.sock", {"client_name": "x", "db": 1}),
    ],
)
def test_keys_redis_py_takes_are_kept(
    location: str, connection_options: dict[object, object]
) -> None:
    assert settings(location, connection_options).connection_options == connection_options


SECONDS_OR_NONE = ". Use a positive number of seconds or a timedelta or None."


# key, value, what the error says after "OPTIONS['connection_options'][key] is value"
BAD_VALUES = [
    ("socket_timeout", "abc", SECONDS_OR_NONE),  # check --deploy: redis-py's bare TypeError
    ("socket_timeout", -1, SECONDS_OR_NONE),  # "ValueError: Timeout value out of range"
    ("socket_connect_timeout", 0, SECONDS_OR_NONE),  # E001 "unreachable" with Redis up
    ("socket_timeout", 1e20, ", longer than 1 day. Use at most 86400 seconds or None."),
    (
        "socket_connect_timeout",
        0.0001,
        ", shorter than 1 ms. Use at least 0.001 seconds: Redis counts time in whole milliseconds.",
    ),
    ("timeout", None, ". Use a positive number of seconds or a timedelta."),  # pool_timeout
    ("timeout", "10", ". Use a positive number of seconds or a timedelta."),
    ("max_connections", None, ". Use a positive whole number."),
    (
        "max_connections",
        10**20,
        ", above 10000. Use at most 10000: Redis serves 10000 clients by default "
        "(maxclients), and redis-py's pool sets aside a slot for each connection when it "
        "is made.",
    ),
    ("health_check_interval", "abc", ". Use a positive number of seconds or a timedelta or 0."),
    ("health_check_interval", -5, ". Use a positive number of seconds or a timedelta or 0."),
]


@pytest.mark.parametrize(
    ("key", "value", "problem"), BAD_VALUES, ids=[f"{k}={v!r}" for k, v, _ in BAD_VALUES]
)
def test_values_are_judged_as_the_options_they_override(
    key: str, value: object, problem: str
) -> None:
    message = f"OPTIONS['connection_options'][{key!r}] is {value!r}{problem}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        settings("redis://h:6379/0", {key: value})


def test_durations_reach_redis_py_as_seconds() -> None:
    given = {
        "socket_timeout": timedelta(seconds=2),
        "socket_connect_timeout": None,
        "timeout": timedelta(milliseconds=1500),
        "health_check_interval": 0,
        "max_connections": 10_000,
    }
    assert settings("redis://h:6379/0", given).connection_options == {
        "socket_timeout": 2.0,
        "socket_connect_timeout": None,
        "timeout": 1.5,
        "health_check_interval": 0,
        "max_connections": 10_000,
    }


def test_cluster_takes_its_own_keys() -> None:
    options = {"read_from_replicas": True, "require_full_coverage": False}
    assert settings("redis://h:7000", options, cluster=True).connection_options == options


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"bogus": 1}}])
def test_unknown_key_is_refused_before_any_enqueue(tasks_options: dict[str, object]) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"has 'bogus', which is no argument of both"):
        echo.enqueue("never sent")  # raised TypeError from AbstractConnection.__init__


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"socket_timeout": "abc"}}])
def test_a_bad_value_is_refused_before_any_enqueue(tasks_options: dict[str, object]) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"\['socket_timeout'\] is 'abc'\. Use a"):
        echo.enqueue("never sent")  # raised TypeError from socket.settimeout


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"retry_on_timeout": True}}])
def test_valid_keys_reach_both_clients(backend: ThreadmillTaskBackend) -> None:
    assert echo.get_result(echo.enqueue("sync").id).args == ["sync"]
    assert echo.get_result(asyncio.run(echo.aenqueue("async")).id).args == ["async"]
