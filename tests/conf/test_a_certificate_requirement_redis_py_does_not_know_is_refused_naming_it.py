"""A TLS certificate requirement redis-py does not know (``ssl_cert_reqs``), in LOCATION's
query or ``connection_options``: ``manage.py check`` found no issue, and each connection failed
with redis-py's bare "RedisError: Invalid SSL Certificate Requirements Flag", the worker's start
in its traceback. It is refused when settings are read instead, naming the fix."""

import re
import ssl

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

FIX = (
    "Use 'required', 'optional' or 'none' (or an ssl.CERT_* value in connection_options), or "
    "leave it out for redis-py's default."
)


@pytest.mark.parametrize("given", ["bogus", "REQUIRED", "CERT_REQUIRED"])
def test_a_query_requirement_redis_py_does_not_know_is_refused(given: str) -> None:
    location = f"rediss://:s3cret@h:6379/0?ssl_cert_reqs={given}"
    message = (
        f"TASKS['default']['LOCATION'] is 'rediss://:***@h:6379/0?ssl_cert_reqs={given}', "
        f"whose query argument 'ssl_cert_reqs' is {given!r}. {FIX}"
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(("given", "shown"), [("bogus", "'bogus'"), (True, "True"), (7, "7")])
def test_a_connection_options_requirement_redis_py_does_not_know_is_refused(
    given: object, shown: str
) -> None:
    options = {"connection_options": {"ssl_cert_reqs": given}}
    message = f"OPTIONS['connection_options']['ssl_cert_reqs'] is {shown}. {FIX}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": "rediss://h:6379/0", "OPTIONS": options})


@pytest.mark.parametrize("given", ["none", "optional", "required"])
def test_a_query_requirement_redis_py_knows_is_kept(given: str) -> None:
    location = f"rediss://h:6379/0?ssl_cert_reqs={given}"
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize("given", ["required", ssl.CERT_REQUIRED, ssl.CERT_NONE, 1, None])
def test_a_connection_options_requirement_redis_py_takes_is_kept(given: object) -> None:
    options = {"connection_options": {"ssl_cert_reqs": given}}
    settings = read_settings("default", {"LOCATION": "rediss://h:6379/0", "OPTIONS": options})
    assert settings.connection_options == {"ssl_cert_reqs": given}
