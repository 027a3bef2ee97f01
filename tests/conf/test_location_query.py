"""LOCATION's query arguments and userinfo: redis-py reads them over what the backend passes, so
each is refused where it would be read other than meant, with the fix, when settings are read."""

import re

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from redis.connection import URL_QUERY_ARGUMENT_PARSERS

from django_threadmill.broker.connection import make_client
from django_threadmill.conf.settings import read_settings

WHERE = "TASKS['default']['LOCATION']"


@pytest.mark.parametrize(
    ("argument", "fix"),
    [
        ("socket_timeout", "OPTIONS['socket_timeout']"),
        ("socket_connect_timeout", "OPTIONS['socket_connect_timeout']"),
        ("max_connections", "OPTIONS['max_connections']"),
        ("timeout", "OPTIONS['pool_timeout']"),
        ("health_check_interval", "OPTIONS['connection_options']['health_check_interval']"),
    ],
)
def test_query_argument_that_would_override_an_option_is_refused(argument: str, fix: str) -> None:
    """redis-py applied it last: the pool got 30 s while the settings (and the worker's idle
    wait, which must fit in the socket timeout) said 10 s, past the options' bounds."""
    location = f"redis://:s3cret@h:6379/0?client_name=app&{argument}=30"
    message = (
        f"{WHERE} is 'redis://:***@h:6379/0?client_name=app&{argument}=30', whose query sets "
        f"{argument!r}, which redis-py would apply over the backend's own setting. Set {fix} "
        "instead and drop it from LOCATION."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


def test_the_pool_gets_the_socket_timeout_the_settings_hold(redis_url: str) -> None:
    settings = read_settings("default", {"LOCATION": redis_url, "OPTIONS": {"socket_timeout": 30}})
    client = make_client(settings)
    try:
        assert client.connection_pool.connection_kwargs["socket_timeout"] == 30
        assert settings.socket_timeout_s == 30
    finally:
        client.close()


@pytest.mark.parametrize(
    ("location", "shown", "argument", "fix"),
    [
        (
            "rediss://h:6380/0?ssl_ca_cert=/ca.pem",
            "rediss://h:6380/0?ssl_ca_cert=***",
            "ssl_ca_cert",
            "Did you mean 'ssl_ca_certs'?",
        ),
        (
            "redis://h:6379/0?client_nme=app",
            "redis://h:6379/0?client_nme=***",
            "client_nme",
            "Did you mean 'client_name'?",
        ),
        (
            "unix:///run/redis.sock?db=1&bogus=1",
            "unix:///run/redis.sock?db=***&bogus=***",
            "bogus",
            "Use one of ",
        ),
        # A misspelt secret: the value shown nowhere, as a password's is not.
        (
            "redis://:s3cret@h:6379/0?pasword=s3cret",
            "redis://:***@h:6379/0?pasword=***",
            "pasword",
            "Did you mean 'password'?",
        ),
    ],
)
def test_unknown_query_argument_is_refused_its_values_masked(
    location: str, shown: str, argument: str, fix: str
) -> None:
    """redis-py passed it to the connection: a bare TypeError at the first call."""
    scheme = location.split(":")[0]
    message = (
        f"{WHERE} is {shown!r}, whose query has {argument!r}, which is no argument of both "
        f"redis-py's sync and asyncio connection pools for {scheme}://. {fix}"
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}"):
        read_settings("default", {"LOCATION": location})


def test_query_argument_redis_py_cannot_read_is_refused() -> None:
    """redis-py raised a bare ValueError when the client was made, at the first enqueue."""
    location = "redis://h:6379/0?socket_read_size=big"
    message = (
        f"{WHERE} is {location!r}: Invalid value for 'socket_read_size' in connection URL. "
        "Fix that query argument or drop it."
    )
    if "socket_read_size" not in URL_QUERY_ARGUMENT_PARSERS:  # redis-py before 8.0 reads none
        message = (  # test_location_query_numbers.py
            f"{WHERE} is {location!r}, whose query sets 'socket_read_size', which redis-py "
            f"{redis.__version__} passes on as text, failing every call (redis-py 8.0+ reads it "
            "as a number). Set OPTIONS['connection_options']['socket_read_size'] to a number "
            "instead and drop it from LOCATION, or upgrade redis-py."
        )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(
    "location",
    [
        "rediss://u:p@h:6380/0?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required",
        "redis://h:6379/0?client_name=a@b&socket_keepalive=yes",
        "unix:///run/redis.sock?db=1",
        "unix:///run/redis@0.sock",
        "redis://bob:p%40ss%23w%2Frd@h:6379/0",
    ],
)
def test_usable_query_arguments_and_userinfo_are_taken(location: str) -> None:
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("redis://:k3y#9z@h:6379/0", "redis://***@h:6379/0"),
        ("redis://user:k3y/9z@h:6379/0", "redis://***@h:6379/0"),
        ("redis://user:k3y?9z@h:6379/0", "redis://***@h:6379/0"),
        ("rediss://k3y#9z@h/0", "rediss://***@h/0"),  # a password where the user goes
        ("unix://:k3y/9z@/run/redis.sock?db=1", "unix://***@/run/redis.sock?db=1"),
    ],
)
def test_password_with_an_unencoded_delimiter_is_refused_unshown(location: str, shown: str) -> None:
    """The '#', '/' or '?' ended the address: the error said the port was wrong and showed the
    password in clear, or redis-py went to another host without it."""
    message = (
        f"{WHERE} is {shown!r}, whose user or password holds '#', '/' or '?', which end the "
        "address in a URL. Percent-encode them, e.g. urllib.parse.quote(password, safe='') "
        "gives 'p%23ss' for 'p#ss'."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$") as raised:
        read_settings("default", {"LOCATION": location})
    assert "k3y" not in str(raised.value)
    assert "9z" not in str(raised.value)


def test_sentinel_primary_gets_the_query_arguments() -> None:
    """Only the credentials, db and TLS were taken from LOCATION: a CA or client name in its
    query was dropped unsaid, and TLS to a primary with a private CA failed to verify."""
    sentinel = {"service_name": "m", "sentinels": [("127.0.0.1", 26379)]}
    location = "rediss://u:p@h:6380/2?ssl_ca_certs=/etc/ca.pem&client_name=app"
    settings = read_settings("default", {"LOCATION": location, "OPTIONS": {"sentinel": sentinel}})
    client = make_client(settings)
    try:
        given = client.connection_pool.connection_kwargs
        assert (given["ssl_ca_certs"], given["client_name"]) == ("/etc/ca.pem", "app")
        assert (given["username"], given["password"], given["db"]) == ("u", "p", 2)
    finally:
        client.close()
