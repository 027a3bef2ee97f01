"""A count or a duration in OPTIONS given as an int of thousands of digits is refused naming the
option and the fix, its value named by its size: the message wrote the value with repr, which
Python refuses past 4,300 digits (sys.get_int_max_str_digits), and a bare ``ValueError`` from the
message itself was all the user saw."""

import pytest

from django_threadmill.conf.settings import read_settings
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill

HUGE = 10**5000


@pytest.mark.parametrize(
    ("option", "fix"),
    [
        ("max_payload_bytes", "Use at most"),
        ("max_connections", "Use at most"),
        # Past every float, as an infinity is: no number of seconds.
        ("lease_ttl", "Use a positive number of seconds or a timedelta"),
        ("socket_timeout", "Use a positive number of seconds or a timedelta"),
    ],
)
def test_an_int_too_long_to_write_is_named_by_its_size(option: str, fix: str) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill) as raised:
        read_settings("default", {"OPTIONS": {option: HUGE}})
    message = str(raised.value)
    assert message.startswith(f"OPTIONS['{option}'] is an int of about 5000 digits")
    assert fix in message
    assert len(message) < 400


def test_a_long_list_given_for_a_count_is_shown_cut_short() -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill) as raised:
        read_settings("default", {"OPTIONS": {"max_payload_bytes": list(range(10_000))}})
    assert str(raised.value).startswith("OPTIONS['max_payload_bytes'] is [0, 1, 2, 3, 4, 5, ...]")
