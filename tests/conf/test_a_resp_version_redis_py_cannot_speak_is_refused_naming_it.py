"""A RESP version other than 2 or 3, in LOCATION's query or ``connection_options``: redis-py
refused it at each connect with a ConnectionError, so ``manage.py check`` found no issue, the
worker waited for an "unreachable" Redis without end, and an enqueue said it "may have been
applied". It is refused when settings are read instead, naming the fix."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

FIX = "Use 2 (RESP2) or 3 (RESP3), or leave it out for redis-py's default."


@pytest.mark.parametrize("given", ["4", "1", "resp3", "3.0"])
def test_a_query_protocol_redis_py_cannot_speak_is_refused(given: str) -> None:
    location = f"redis://:s3cret@h:6379/0?protocol={given}"
    message = (
        f"TASKS['default']['LOCATION'] is 'redis://:***@h:6379/0?protocol={given}', whose "
        f"query argument 'protocol' is {given!r}. {FIX}"
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})


@pytest.mark.parametrize(("given", "shown"), [(4, "4"), ("resp3", "'resp3'"), (True, "True")])
def test_a_connection_options_protocol_redis_py_cannot_speak_is_refused(
    given: object, shown: str
) -> None:
    options = {"connection_options": {"protocol": given}}
    message = f"OPTIONS['connection_options']['protocol'] is {shown}. {FIX}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": "redis://h:6379/0", "OPTIONS": options})


@pytest.mark.parametrize("given", ["2", "3"])
def test_a_query_protocol_of_2_or_3_is_kept(given: str) -> None:
    location = f"redis://h:6379/0?protocol={given}"
    assert read_settings("default", {"LOCATION": location}).location == location


@pytest.mark.parametrize("given", [2, 3, "3", None])
def test_a_connection_options_protocol_of_2_or_3_is_kept(given: object) -> None:
    options = {"connection_options": {"protocol": given}}
    settings = read_settings("default", {"LOCATION": "redis://h:6379/0", "OPTIONS": options})
    assert settings.connection_options == {"protocol": given}
