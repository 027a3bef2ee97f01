"""A limit of thousands of digits is refused naming the option and the fix, as other bad ones.

Python writes and reads ints of at most 4,300 digits (sys.get_int_max_str_digits). A rate of
"1" and 5,000 zeros per second raised that bare ValueError from ``int()``, naming neither the
option nor the fix; a concurrency of 10**5000 was taken, and every acquire of its queue then
failed writing it for Redis, as the same ValueError. An int that large given where a dict or a
rate belongs raised it too, from the error message meant to name it.
"""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.conf.settings import read_settings

HUGE = 10**5000  # 5,001 digits: past what Python writes
HUGE_TEXT = "1" + "0" * 5000
RATE_FIX = "Use 'N/s', 'N/m' or 'N/h' with N a positive whole number of starts"
CONCURRENCY_FIX = (
    "Use a positive whole number: the most tasks of that queue running at once across all "
    "workers, at most 2**53; leave 'concurrency' out for no limit."
)


def refused(queue_limits: object) -> str:
    """Read ``queue_limits``; return the message of the settings error it must raise."""
    with pytest.raises(ImproperlyConfigured) as raised:
        read_settings("default", {"OPTIONS": {"queue_limits": queue_limits}})
    return str(raised.value)


@pytest.mark.parametrize(
    ("limits", "start"),
    [
        (
            {"reports": {"rate": f"{HUGE_TEXT}/s"}},
            f"OPTIONS['queue_limits']['reports']['rate'] is '1{'0' * 46}...{'0' * 46}/s'. "
            f"{RATE_FIX}",
        ),
        (
            {"reports": {"rate": HUGE}},
            f"OPTIONS['queue_limits']['reports']['rate'] is an int of about 5000 digits. "
            f"{RATE_FIX}",
        ),
        (
            {"reports": {"concurrency": HUGE}},
            "OPTIONS['queue_limits']['reports']['concurrency'] is an int of about 5000 digits. "
            f"{CONCURRENCY_FIX}",
        ),
        (
            {"reports": {"concurrency": 2**64}},
            "OPTIONS['queue_limits']['reports']['concurrency'] is 18446744073709551616. "
            f"{CONCURRENCY_FIX}",
        ),
        (
            {"reports": HUGE},
            "OPTIONS['queue_limits']['reports'] is an int of about 5000 digits. Use a dict",
        ),
        (HUGE, "OPTIONS['queue_limits'] is an int of about 5000 digits. Use a dict"),
    ],
    ids=["rate text", "rate int", "concurrency", "concurrency past 2**53", "limits", "option"],
)
def test_the_error_names_the_option_and_the_fix(limits: object, start: str) -> None:
    assert re.match(re.escape(start), refused(limits))


def test_leading_zeros_still_read_as_the_rate_they_spell() -> None:
    settings = read_settings(
        "default", {"OPTIONS": {"queue_limits": {"reports": {"rate": "0000000600/m"}}}}
    )
    assert settings.limit_of("reports").token_interval_us == 100_000
