"""drain() refuses a ``max_tasks`` or ``wait_for_delayed`` too long to show with its error,
the value cut short (wording.shown), as every other bad argument is refused.

An int past Python's 4,300 digits could not be formatted at all: drain(max_tasks=-10**5000)
raised a bare "ValueError: Exceeds the limit (4300 digits) for integer string conversion",
naming neither the argument nor the fix; a long str was echoed whole, 100,000 characters of
message for one of 100,000.
"""

import pytest

from django_threadmill.testing import drain

LONG = "x" * 100_000


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (
            {"max_tasks": -(10**5000)},
            ValueError,
            "max_tasks=an int of about 5000 digits is not a number of tasks to run. Pass 1 or "
            "more.",
        ),
        (
            {"max_tasks": LONG},
            TypeError,
            f"max_tasks='{'x' * 47}...{'x' * 48}' is a str, not a number of tasks. Pass an "
            "int, 1 or more.",
        ),
        (
            {"wait_for_delayed": 10**5000},
            ValueError,
            "wait_for_delayed=an int of about 5000 digits is not a wait. Pass 0 or more seconds, "
            "or a timedelta.",
        ),
        (
            {"wait_for_delayed": LONG},
            TypeError,
            f"wait_for_delayed='{'x' * 47}...{'x' * 48}' is a str, not a wait. Pass an int or a "
            "float of seconds, 0 or more, or a timedelta.",
        ),
    ],
)
def test_the_argument_is_named_with_the_fix_and_its_value_cut_short(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        drain(**arguments)  # type: ignore[arg-type]
    assert str(raised.value) == message
