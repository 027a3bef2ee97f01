"""connection_options keys are checked against what redis-py's clients take, when settings are
read: an unknown one raised a bare TypeError at the first enqueue."""

import asyncio
import re

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


def test_cluster_takes_its_own_keys() -> None:
    options = {"read_from_replicas": True, "require_full_coverage": False}
    assert settings("redis://h:7000", options, cluster=True).connection_options == options


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"bogus": 1}}])
def test_unknown_key_is_refused_before_any_enqueue(tasks_options: dict[str, object]) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"has 'bogus', which is no argument of both"):
        echo.enqueue("never sent")  # raised TypeError from AbstractConnection.__init__


@pytest.mark.parametrize("tasks_options", [{"connection_options": {"retry_on_timeout": True}}])
def test_valid_keys_reach_both_clients(backend: ThreadmillTaskBackend) -> None:
    assert echo.get_result(echo.enqueue("sync").id).args == ["sync"]
    assert echo.get_result(asyncio.run(echo.aenqueue("async")).id).args == ["async"]
