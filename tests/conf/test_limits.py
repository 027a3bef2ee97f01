"""OPTIONS["queue_limits"]: concurrency and rate per queue, with a clear error for bad values."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.limits import QueueLimit
from django_threadmill.conf.settings import read_settings


def limits(value: object) -> dict[str, QueueLimit]:
    return read_settings("default", {"OPTIONS": {"queue_limits": value}}).queue_limits


def test_limits_are_read_per_queue() -> None:
    read = limits({"reports": {"concurrency": 2, "rate": "600/m"}, "emails": {"rate": "3/s"}})
    assert read == {
        "reports": QueueLimit(concurrency=2, rate="600/m", token_interval_us=100_000),
        "emails": QueueLimit(rate="3/s", token_interval_us=333_334),  # rounded up, never faster
    }


def test_a_queue_without_limits_has_none() -> None:
    settings = read_settings("default", {"OPTIONS": {"queue_limits": {"reports": {"rate": "1/h"}}}})
    assert settings.limit_of("default") == QueueLimit()
    assert settings.limit_of("reports").token_interval_us == 3_600_000_000


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], r"OPTIONS\['queue_limits'\] is \[\]\. Use a dict of queue name to limits"),
        ({"reports": {}}, r"\['reports'\] is \{\}\. Use a dict with 'concurrency' and/or 'rate'"),
        ({"reports": {"burst": 3}}, r"\['reports'\]\['burst'\] is not a limit\. The limits"),
        ({"reports": {"concurrency": 0}}, r"\['concurrency'\] is 0\. Use a positive whole number"),
        ({"reports": {"concurrency": True}}, r"\['concurrency'\] is True\."),
        ({"reports": {"rate": "10/d"}}, r"\['rate'\] is '10/d'\. Use 'N/s', 'N/m' or 'N/h'"),
        ({"reports": {"rate": "0/s"}}, r"\['rate'\] is '0/s'\."),
        ({"reports": {"rate": "2000/s"}}, r"at most one per millisecond"),
        ({"reports": {"rate": 10}}, r"\['rate'\] is 10\."),
    ],
)
def test_bad_limits_say_how_to_fix_them(value: object, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        limits(value)
