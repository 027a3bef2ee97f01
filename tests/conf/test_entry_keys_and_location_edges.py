"""A first deploy's settings mistakes are refused when settings are read, naming the fix: a
misspelt TASKS key, a stray bracket in LOCATION, connection options the backend sets itself,
and a LOCATION no Redis Cluster client can use."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.conf.settings import BackendSettings, read_settings

LOCATION = "redis://127.0.0.1:6379/0"
IN_OPTIONS = "OPTIONS['connection_options']"


def settings(location: str = LOCATION, **options: object) -> BackendSettings:
    return read_settings("default", {"LOCATION": location, "OPTIONS": options})


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("LOCATON", "Did you mean 'LOCATION'?"),  # tasks went to the Redis on 127.0.0.1
        ("location", "Did you mean 'LOCATION'?"),
        ("OPTION", "Did you mean 'OPTIONS'?"),  # every option dropped unsaid
        ("KEY_PREFIX", "Put it in OPTIONS, as 'key_prefix'."),  # where CACHES has it
        ("ENQUEUE_ON_COMMIT", "Put it in OPTIONS, as 'enqueue_on_commit'."),
        ("TIMEOUT", "Use BACKEND, LOCATION, QUEUES, OPTIONS; tuning goes in OPTIONS."),
    ],
)
def test_a_tasks_key_the_backend_does_not_read_is_refused_with_the_fix(key: str, fix: str) -> None:
    params = {"BACKEND": "django_threadmill.backend.ThreadmillTaskBackend", key: "redis://prod"}
    message = f"TASKS['default'] has {key!r}, which ThreadmillTaskBackend does not read. {fix}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        ThreadmillTaskBackend("default", {**params, "QUEUES": ["default"]})


def test_the_keys_a_tasks_entry_holds_are_taken() -> None:
    params = {
        "BACKEND": "django_threadmill.backend.ThreadmillTaskBackend",
        "LOCATION": "redis://prod:6379/2",
        "QUEUES": ["default"],
        "OPTIONS": {"key_prefix": "shop"},
    }
    backend = ThreadmillTaskBackend("default", params)
    assert (backend.settings.location, backend.settings.key_prefix) == (params["LOCATION"], "shop")


@pytest.mark.parametrize(
    "location",
    [
        "redis://app:pa[ss@redis:6379/0",  # raised "ValueError: Invalid IPv6 URL"
        "rediss://app:p[x]s@redis:6380/0",  # "ValueError: 'x' does not appear to be an IPv4..."
        "redis://[::1/0",
    ],
)
def test_a_bracket_outside_an_ipv6_host_is_refused_without_the_password(location: str) -> None:
    message = (
        "TASKS['default']['LOCATION'] holds a '[' or ']' that does not enclose an IPv6 host. "
        "Write an IPv6 host in brackets, e.g. 'redis://[::1]:6379/0', and percent-encode them "
        "in a user or password: urllib.parse.quote(password, safe='') gives 'p%5Bss' for 'p[ss'."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$") as raised:
        settings(location)
    assert raised.value.__suppress_context__  # urllib's words quote a part of the password


def test_a_percent_encoded_bracket_in_a_password_is_taken() -> None:
    assert settings("redis://app:pa%5Bss@redis:6379/0").location.endswith("@redis:6379/0")


@pytest.mark.parametrize(
    ("location", "connection_options", "holder", "key"),
    [
        # Each result then read as a damaged record, to delete (PayloadError).
        (LOCATION, {"decode_responses": False}, IN_OPTIONS, "decode_responses"),
        # The first enqueue failed with redis-py's NoScriptError.
        (LOCATION, {"encoding": "latin-1"}, IN_OPTIONS, "encoding"),
        (LOCATION, {"encoding_errors": "ignore"}, IN_OPTIONS, "encoding_errors"),
        (
            f"{LOCATION}?encoding=latin-1",
            {},
            f"TASKS['default']['LOCATION'] is '{LOCATION}?encoding=***', whose query",
            "encoding",
        ),
    ],
)
def test_a_decoding_option_the_backend_sets_itself_is_refused(
    location: str, connection_options: dict[str, object], holder: str, key: str
) -> None:
    message = (
        f"{holder} has {key!r}, which the backend sets itself: it reads every Redis reply as "
        "text decoded from UTF-8. Drop it."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        settings(location, connection_options=connection_options)


@pytest.mark.parametrize(
    ("location", "db"),
    [("redis://node1:7000/1", "1"), ("redis://node1:7000/0?db=2", "2")],
)
def test_a_database_but_0_on_a_cluster_is_refused(location: str, db: str) -> None:
    """redis-py refused it at the first call, which read as a cluster mid-failover whose call
    may have been applied (MaybeApplied)."""
    message = (
        f"TASKS['default']['LOCATION'] is {location!r}, whose database is {db}, but "
        "OPTIONS['cluster'] is True: a Redis Cluster has database 0 only. Use 0, e.g. "
        "'redis://node1:7000/0', and give each project sharing the cluster its own "
        "OPTIONS['key_prefix']."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        settings(location, cluster=True)


def test_a_unix_socket_on_a_cluster_is_refused() -> None:
    message = (
        "TASKS['default']['LOCATION'] is 'unix://:***@/run/redis.sock', a Unix socket, but "
        "OPTIONS['cluster'] is True: redis-py reaches the nodes of a Redis Cluster over TCP "
        "only. Name a node, e.g. 'redis://node1:7000'."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        settings("unix://:s3cret@/run/redis.sock", cluster=True)


@pytest.mark.parametrize(
    "location",
    ["redis://node1:7000", "redis://node1:7000/", "redis://node1:7000/0", "redis://n:7000/1?db=0"],
)
def test_database_0_on_a_cluster_is_taken(location: str) -> None:
    assert settings(location, cluster=True).location == location
