"""A LOCATION refused for its scheme is named with its password masked, as every other is.

The check of the scheme came before any masking and quoted LOCATION whole: a URL of another
scheme (``memcache://``, ``valkey://``, one with a stray space before it), one without a
scheme, or a list of URLs copied from ``CACHES`` put the Redis password in the message, which
Django prints at start, the checks list, and error trackers keep.
"""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

FIX = (
    ". Use a Redis URL such as 'redis://localhost:6379/0', 'rediss://user:password@host:6380/0' "
    "or 'unix:///run/redis.sock'."
)


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        ("memcache://:s3cret@h:11211/0", "'memcache://:***@h:11211/0'"),
        ("valkey://app:s3cret@h:6379/0", "'valkey://app:***@h:6379/0'"),
        (" redis://app:s3cret@h:6379/0", "' redis://app:***@h:6379/0'"),
        ("REDIS://app:s3cret@h:6379/0?password=s3cret", "'REDIS://app:***@h:6379/0?password=***'"),
        ("app:s3cret@h:6379/0", "'***@h:6379/0'"),
        (":s3cret@h:6379", "'***@h:6379'"),
        (
            ["redis://:s3cret@h1:6379/0", "redis://:s3cret@h2:6379/0"],
            "['redis://:***@h1:6379/0', 'redis://:***@h2:6379/0']",
        ),
        (("redis://:s3cret@h1:6379/0", 6379), "('redis://:***@h1:6379/0', 6379)"),
    ],
)
def test_the_password_of_a_location_refused_for_its_scheme_is_masked(
    location: object, shown: str
) -> None:
    message = f"TASKS['default']['LOCATION'] is {shown}{FIX}"
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"LOCATION": location})
