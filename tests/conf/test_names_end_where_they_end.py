"""A queue name or key prefix ending in a line break is refused, as any other character outside
the rule is: a "$" in the pattern let "emails\n" and "tm\n" through, into Redis keys and log
lines."""

import pytest

from django_threadmill.conf.settings import check_queue_name, read_settings
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill


@pytest.mark.parametrize("name", ["emails\n", "emails\r\n", "emails "])
def test_a_queue_name_ending_in_a_line_break_is_refused(name: str) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill, match="Use 1-64 letters"):
        check_queue_name(name)


def test_a_key_prefix_ending_in_a_line_break_is_refused() -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill, match=r"OPTIONS\['key_prefix'\]"):
        read_settings(
            "default", {"LOCATION": "redis://127.0.0.1:6379/0", "OPTIONS": {"key_prefix": "tm\n"}}
        )
