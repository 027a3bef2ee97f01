"""OPTIONS cluster, sentinel and durability: read once, with the fix in every error."""

import re

import pytest

from django_threadmill.conf.settings import (
    BackendSettings,
    Durability,
    SentinelSettings,
    read_settings,
)
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill


def options(**values: object) -> BackendSettings:
    return read_settings("default", {"OPTIONS": values})


def test_defaults_are_one_redis_with_local_durability() -> None:
    settings = options()
    assert (settings.cluster, settings.sentinel, settings.durability) == (
        False,
        None,
        Durability.LOCAL,
    )


def test_read_values() -> None:
    settings = options(cluster=True, durability="replicated", durability_timeout=0.5)
    assert (settings.cluster, settings.durability, settings.durability_timeout_ms) == (
        True,
        Durability.REPLICATED,
        500,
    )
    sentinel = options(
        sentinel={"service_name": "main", "sentinels": [["10.0.0.1", 26379]], "password": "pw"}
    ).sentinel
    assert sentinel == SentinelSettings("main", (("10.0.0.1", 26379),), {"password": "pw"})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"cluster": "yes"}, "OPTIONS['cluster'] is 'yes'. Use True for a Redis Cluster"),
        (
            {"durability": "disk"},
            "OPTIONS['durability'] is 'disk'. Use one of 'local', 'replicated', 'fsync'.",
        ),
        ({"durability_timeout": 0}, "OPTIONS['durability_timeout'] is 0."),
        ({"sentinel": "host:26379"}, "OPTIONS['sentinel'] is 'host:26379'. Use a dict"),
        (
            {"sentinel": {"service_name": "m", "sentinels": [("h", 1)], "db": 1}},
            "OPTIONS['sentinel'] has unknown keys ['db']",
        ),
        ({"sentinel": {"sentinels": [("h", 1)]}}, "OPTIONS['sentinel']['service_name'] is None"),
        (
            {"sentinel": {"service_name": "m", "sentinels": ["h:1"]}},
            "OPTIONS['sentinel']['sentinels'] is ['h:1']. Use a list of (host, port) pairs",
        ),
        (
            {"sentinel": {"service_name": "m", "sentinels": []}},
            "OPTIONS['sentinel']['sentinels'] is [].",
        ),
        (
            {"cluster": True, "sentinel": {"service_name": "m", "sentinels": [("h", 1)]}},
            "OPTIONS sets both 'cluster' and 'sentinel'.",
        ),
    ],
)
def test_unusable_values_say_the_fix(values: dict[str, object], message: str) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill, match=re.escape(message)):
        options(**values)


@pytest.mark.parametrize(
    ("auth", "read"),
    [
        ({"password": None}, {}),  # was the password "None"
        ({"username": None, "password": None}, {}),
        ({"username": "watcher", "password": None}, {"username": "watcher"}),
        ({"username": "watcher", "password": "pw"}, {"username": "watcher", "password": "pw"}),
    ],
)
def test_sentinel_auth_of_none_is_no_auth(auth: dict[str, object], read: dict[str, str]) -> None:
    sentinel = options(sentinel={"service_name": "m", "sentinels": [("h", 26379)], **auth}).sentinel
    assert sentinel is not None
    assert sentinel.auth == read


@pytest.mark.parametrize(("key", "value"), [("password", 1234), ("username", b"watcher")])
def test_sentinel_auth_that_is_no_string_is_refused(key: str, value: object) -> None:
    message = (
        f"OPTIONS['sentinel'][{key!r}] is {type(value).__name__}. Use a string, or None when the "
        "sentinels need no AUTH, e.g. {'service_name': 'mymaster', 'sentinels': "
        "[('10.0.0.1', 26379)], 'password': '...'}."
    )
    with pytest.raises(ImproperlyConfiguredThreadmill, match=f"^{re.escape(message)}$"):
        options(sentinel={"service_name": "m", "sentinels": [("h", 26379)], key: value})


@pytest.mark.parametrize("port", [0, -1, 65536, 99999])
def test_sentinel_port_out_of_range_is_refused(port: int) -> None:
    message = (
        f"OPTIONS['sentinel']['sentinels'] has ('h2', {port}), whose port is not a number from 1 "
        "to 65535. Use a port in that range, e.g. {'service_name': 'mymaster', 'sentinels': "
        "[('10.0.0.1', 26379)], 'password': '...'}."
    )
    sentinels = [("h1", 26379), ("h2", port)]
    with pytest.raises(ImproperlyConfiguredThreadmill, match=f"^{re.escape(message)}$"):
        options(sentinel={"service_name": "m", "sentinels": sentinels})


def test_sentinel_ports_at_the_ends_of_the_range_are_taken() -> None:
    sentinels = (("h1", 1), ("h2", 65535))
    sentinel = options(sentinel={"service_name": "m", "sentinels": sentinels}).sentinel
    assert sentinel is not None
    assert sentinel.sentinels == sentinels
