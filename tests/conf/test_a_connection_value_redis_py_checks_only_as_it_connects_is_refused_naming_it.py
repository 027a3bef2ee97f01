"""Connection values redis-py checks only as it connects, in LOCATION's query or
``connection_options``, are refused when settings are read, naming the fix.

A RESP version other than 2 or 3 (``protocol``) failed each connect with a ConnectionError:
``manage.py check`` found no issue, the worker waited for an "unreachable" Redis without end,
and an enqueue said it "may have been applied". A TLS certificate requirement redis-py does not
know (``ssl_cert_reqs``) failed each connection with a bare "RedisError: Invalid SSL Certificate
Requirements Flag", the worker's start in its traceback.
"""

import re
import ssl
from typing import NamedTuple

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings


class Case(NamedTuple):
    scheme: str
    fix: str
    refused_in_query: list[str]
    refused_in_options: list[tuple[object, str]]  # the value, as the message shows it
    kept_in_query: list[str]
    kept_in_options: list[object]


CASES = {
    "protocol": Case(
        "redis",
        "Use 2 (RESP2) or 3 (RESP3), or leave it out for redis-py's default.",
        ["4", "1", "resp3", "3.0"],
        [(4, "4"), ("resp3", "'resp3'"), (True, "True")],
        ["2", "3"],
        [2, 3, "3", None],
    ),
    "ssl_cert_reqs": Case(
        "rediss",
        "Use 'required', 'optional' or 'none' (or an ssl.CERT_* value in connection_options), "
        "or leave it out for redis-py's default.",
        ["bogus", "REQUIRED", "CERT_REQUIRED"],
        [("bogus", "'bogus'"), (True, "True"), (7, "7")],
        ["none", "optional", "required"],
        ["required", ssl.CERT_REQUIRED, ssl.CERT_NONE, 1, None],
    ),
}


def each(field: str) -> list[tuple[str, object]]:
    """Every (argument, value) pair of ``field`` over the cases, for parametrize."""
    return [(name, value) for name, case in CASES.items() for value in getattr(case, field)]


@pytest.mark.parametrize(("argument", "given"), each("refused_in_query"))
def test_a_query_value_redis_py_would_refuse_is_refused(argument: str, given: str) -> None:
    case = CASES[argument]
    location = f"{case.scheme}://:s3cret@h:6379/0?{argument}={given}"
    message = (
        f"TASKS['default']['LOCATION'] is '{case.scheme}://:***@h:6379/0?{argument}={given}', "
        f"whose query argument {argument!r} is {given!r}. {case.fix}"
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(("argument", "refused"), each("refused_in_options"))
def test_a_connection_options_value_redis_py_would_refuse_is_refused(
    argument: str, refused: tuple[object, str]
) -> None:
    case = CASES[argument]
    given, shown = refused
    options = {"connection_options": {argument: given}}
    message = f"OPTIONS['connection_options'][{argument!r}] is {shown}. {case.fix}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": f"{case.scheme}://h:6379/0", "OPTIONS": options})


@pytest.mark.parametrize(("argument", "given"), each("kept_in_query"))
def test_a_query_value_redis_py_takes_is_kept(argument: str, given: str) -> None:
    location = f"{CASES[argument].scheme}://h:6379/0?{argument}={given}"
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize(("argument", "given"), each("kept_in_options"))
def test_a_connection_options_value_redis_py_takes_is_kept(argument: str, given: object) -> None:
    options = {"connection_options": {argument: given}}
    location = f"{CASES[argument].scheme}://h:6379/0"
    settings = read_settings("default", {"LOCATION": location, "OPTIONS": options})
    assert settings.connection_options == {argument: given}
