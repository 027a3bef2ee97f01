"""A LOCATION whose host holds what no host name holds is refused when settings are read: it
was taken, then read as Redis unreachable for ever, so a worker retried for ever and
``threadmill_health --redis-down-ok`` passed for ever."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

WHERE = "TASKS['default']['LOCATION']"
FIX = (
    ', which no host name holds (a space, a control character, or one of <>"{}|\\^`), so '
    "Redis could never be reached. Write the server's name or address, e.g. "
    "'redis://redis.internal:6379/0' or 'redis://[::1]:6379/0'."
)


def read(location: str) -> str:
    return read_settings("default", {"LOCATION": location}).location


@pytest.mark.parametrize(
    ("location", "shown", "host", "bad"),
    [
        ("redis://no host/0", "redis://no host/0", "no host", " "),
        ("redis://redis /0", "redis://redis /0", "redis ", " "),
        ("redis://no%20host/0", "redis://no%20host/0", "no host", " "),  # redis-py decodes it
        ("redis://a\x00b:6379/0", "redis://a\x00b:6379/0", "a\x00b", "\x00"),
        ("redis://a\x7fb/0", "redis://a\x7fb/0", "a\x7fb", "\x7f"),
        ("redis://a\u00a0b/0", "redis://a\u00a0b/0", "a\u00a0b", "\u00a0"),
        ("rediss://:s3cret@bad host:6380/0", "rediss://:***@bad host:6380/0", "bad host", " "),
        *[(f"redis://a{c}b/0", f"redis://a{c}b/0", f"a{c}b", c) for c in '<>"{}|\\^`'],
    ],
)
def test_a_host_holding_what_no_host_name_holds_is_refused(
    location: str, shown: str, host: str, bad: str
) -> None:
    message = f"{WHERE} is {shown!r}, whose host {host!r} holds {bad!r}{FIX}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read(location)


@pytest.mark.parametrize(
    ("location", "read_as"),
    [
        ("redis://bad\thost/0", "redis://badhost/0"),  # urllib drops it: 'badhost' was reached
        ("redis://redis:6379/0\n?db=1", "redis://redis:6379/0?db=1"),
        ("rediss://app:s3cret@bad\nhost:6380/0", "rediss://app:***@badhost:6380/0"),
        ("rediss://app:s3\tcret@redis:6380/0", "rediss://app:***@redis:6380/0"),
        ("unix:///run/re\rdis.sock", "unix:///run/redis.sock"),
    ],
)
def test_a_tab_or_line_break_within_it_is_refused_shown_as_urllib_reads_it(
    location: str, read_as: str
) -> None:
    message = (
        f"{WHERE} holds a tab or line break, which a URL cannot hold: it reads as {read_as!r}, "
        "with it dropped. Remove it from LOCATION (and percent-encode one a password holds: "
        "urllib.parse.quote(password, safe=''))."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read(location)


@pytest.mark.parametrize(
    "location",
    [
        "redis://[::1]:6379/0",
        "redis://[fe80::1%25eth0]:6379/0",  # an IPv6 zone
        "redis://bücher.example:6379/0",  # IDNA
        "redis://xn--bcher-kva.example/0",
        "redis://redis_primary:6379/0",  # a container's name
        "rediss://u:pa ss@redis.internal:6380/0",  # a space in a password reaches redis-py
        "unix:///run/my redis.sock",  # the socket's path, not a host
        "redis://redis:6379/0\n",  # read from a file: urllib drops it, harmlessly
        "redis://redis\r\n",
    ],
)
def test_hosts_a_resolver_may_find_are_taken(location: str) -> None:
    assert read(location) == location
