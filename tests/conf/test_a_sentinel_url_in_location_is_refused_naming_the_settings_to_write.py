"""A Sentinel URL in LOCATION, as other libraries take one, is refused naming the settings this
backend takes instead: OPTIONS['sentinel'] for the sentinels and service, LOCATION for the
primary's user, password and database.

Celery takes ``sentinel://host:26379;sentinel://...``, redis-sentinel-url and others
``redis+sentinel://host:26379,host2:26379/mymaster/0``, Lettuce ``redis-sentinel://...#mymaster``.
Such a LOCATION was refused with "Use a Redis URL such as 'redis://localhost:6379/0'" alone: a
user who followed it put a sentinel's address in LOCATION, and Sentinel was never mentioned.
And of Celery's several URLs, the password of the first alone was masked.
"""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

AUTH = (
    ", with the sentinels' own user and password, if they need AUTH, as its 'username' and "
    "'password'."
)


@pytest.mark.parametrize(
    ("location", "shown", "write"),
    [
        (
            "redis+sentinel://:s3cret@10.0.0.1:26379,10.0.0.2:26380/mymaster/2",
            "'redis+sentinel://:***@10.0.0.1:26379,10.0.0.2:26380/mymaster/2'",
            "'LOCATION': 'redis://:***@sentinel-managed/2' and OPTIONS['sentinel'] = "
            "{'service_name': 'mymaster', 'sentinels': [('10.0.0.1', 26379), ('10.0.0.2', 26380)]}",
        ),
        (
            "sentinel://app:s3cret@s1:26379;sentinel://app:s3cret@s2",
            "'sentinel://app:***@s1:26379;sentinel://app:***@s2'",
            "'LOCATION': 'redis://app:***@sentinel-managed/0' and OPTIONS['sentinel'] = "
            "{'service_name': <the name the sentinels monitor: Celery's master_name>, "
            "'sentinels': [('s1', 26379), ('s2', 26379)]}",
        ),
        (
            "rediss-sentinel://[::1]:26379/0#primary",
            "'rediss-sentinel://[::1]:26379/0#primary'",
            "'LOCATION': 'rediss://sentinel-managed/0' and OPTIONS['sentinel'] = "
            "{'service_name': 'primary', 'sentinels': [('::1', 26379)]}",
        ),
    ],
)
def test_a_sentinel_url_is_refused_naming_the_sentinel_settings_to_write(
    location: str, shown: str, write: str
) -> None:
    message = (
        f"TASKS['default']['LOCATION'] is {shown}, a Sentinel URL, which this backend does not "
        "read: it takes the sentinels and the service in OPTIONS['sentinel'], and the "
        "primary's user, password and database in LOCATION, whose host is not used. Write "
        f"{write}{AUTH}"
    )
    with pytest.raises(ImproperlyConfigured) as caught:
        read_settings("default", {"LOCATION": location})
    assert str(caught.value) == message


def test_a_sentinel_url_it_cannot_read_still_names_the_settings() -> None:
    example = (
        "'LOCATION': 'redis://sentinel-managed/0' and OPTIONS['sentinel'] = {'service_name': "
        "'mymaster', 'sentinels': [('10.0.0.1', 26379)]}"
    )
    with pytest.raises(ImproperlyConfigured, match=re.escape(f"Write e.g. {example}{AUTH}")):
        read_settings("default", {"LOCATION": "sentinel://s1:port/0"})
