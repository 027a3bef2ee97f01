"""LOCATION is refused where redis-py would read it other than meant, and passwords stay out of
the settings' repr."""

import inspect
import re

import pytest
import redis.asyncio
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

ASYNC_SSL_ARGUMENTS = inspect.signature(redis.asyncio.SSLConnection).parameters
PORT_FIX = ", whose port is not a number from 1 to 65535. Use a port in that range, e.g. "


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("redis://127.0.0.1:99999/0", "redis://127.0.0.1:99999/0"),
        ("redis://127.0.0.1:0/0", "redis://127.0.0.1:0/0"),  # redis-py would use 6379
        ("rediss://u:secret@h:70000/1", "rediss://u:***@h:70000/1"),
        ("redis://h:port/0", "redis://h:port/0"),
    ],
)
def test_location_port_out_of_range_is_refused(location: str, shown: str) -> None:
    message = f"TASKS['default']['LOCATION'] is {shown!r}{PORT_FIX}'redis://localhost:6379/0'."
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(
    ("location", "db"),
    [
        ("redis://h:6379/abc", "abc"),
        ("redis://h:6379/-1", "-1"),
        ("redis://h:6379/0?db=x", "x"),
        ("unix:///run/redis.sock?db=two", "two"),
    ],
)
def test_location_database_that_is_no_number_is_refused(location: str, db: str) -> None:
    message = (
        f"TASKS['default']['LOCATION'] is {location!r}, whose database {db!r} is not a whole "
        "number. Use a database number from 0 up, e.g. 'redis://localhost:6379/0' or "
        "'unix:///run/redis.sock?db=0'."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(
    "location",
    [
        "redis://h",
        "redis://h:6379",
        "redis://h:6379/",
        "redis://h:65535/15",
        "redis://[::1]:6379/2",
        "rediss://u:p@h:6380/1?db=3",
        "unix:///run/redis-0.sock",
        "unix:///run/redis.sock?db=1",
    ],
)
def test_usable_locations_are_taken(location: str) -> None:
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
        ("rediss://app:s3cret@[::1]:6380/1", "rediss://app:***@[::1]:6380/1"),
        ("unix://:s3cret@/run/redis.sock?db=1", "unix://:***@/run/redis.sock?db=1"),
        ("unix:///run/redis.sock?password=s3cret&db=1", "unix:///run/redis.sock?password=***&db=1"),
        ("rediss://h:6380/0?ssl_password=s3cret", "rediss://h:6380/0?ssl_password=***"),
        # A user without a password: most often a password written where the user goes.
        ("redis://s3cret@h:6379/0", "redis://:***@h:6379/0"),
    ],
)
def test_location_password_stays_out_of_repr(location: str, shown: str) -> None:
    if "ssl_password" in location and "ssl_password" not in ASYNC_SSL_ARGUMENTS:
        with pytest.raises(ImproperlyConfigured) as refused:  # redis-py 7.2+ takes it
            read_settings("default", {"LOCATION": location})
        assert "s3cret" not in str(refused.value)
        assert f"is {shown!r}, whose query has 'ssl_password'" in str(refused.value)
        return
    settings = read_settings("default", {"LOCATION": location})
    assert "s3cret" not in repr(settings)
    assert f"location={shown!r}" in repr(settings)
    assert settings.location == location  # only the repr is masked


def test_sentinel_password_stays_out_of_repr() -> None:
    sentinel = {"service_name": "m", "sentinels": [("h", 26379)], "password": "s3cret"}
    settings = read_settings("default", {"OPTIONS": {"sentinel": sentinel}})
    assert "s3cret" not in repr(settings)
    assert "sentinels=(('h', 26379),)" in repr(settings)
    assert settings.sentinel is not None
    assert settings.sentinel.auth == {"password": "s3cret"}


def test_repr_names_the_other_fields() -> None:
    settings = read_settings("default", {"OPTIONS": {"key_prefix": "app"}})
    assert repr(settings).startswith("BackendSettings(alias='default', location='redis://")
    assert "key_prefix='app'" in repr(settings)
