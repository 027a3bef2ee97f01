"""``?connection_class=`` in LOCATION: a URL gives it as text, which redis-py's pool took for
the class and called, so every call, the worker's start and each enqueue, ended in a bare
"TypeError: 'str' object is not callable" while ``manage.py check`` found no issue. It is
refused when settings are read, naming the scheme as the way to choose the connection."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings


@pytest.mark.parametrize("scheme", ["redis", "rediss"])
def test_a_connection_class_in_the_query_is_refused(scheme: str) -> None:
    location = f"{scheme}://:s3cret@h:6379/0?connection_class=SSLConnection"
    message = (
        f"TASKS['default']['LOCATION'] is '{scheme}://:***@h:6379/0?connection_class="
        "SSLConnection', whose query sets 'connection_class', which a URL gives as text, not "
        "a class. Drop it: the scheme chooses the connection, rediss:// for TLS and unix:// "
        "for a socket."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})
