"""drain() refuses a ``wait_for_delayed`` or ``max_tasks`` of the wrong type with a TypeError
naming the argument and the types it takes.

``wait_for_delayed=None`` or ``"5"`` raised ValueError, where a ``max_tasks`` of the wrong type
raised TypeError: a test catching one for both missed the other. A value of the right type out of
range (``-1``, NaN) is still a ValueError.
"""

import math
from datetime import timedelta

import pytest

from django_threadmill.testing import drain

WAIT = "Pass an int or a float of seconds, 0 or more, or a timedelta."


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (None, "wait_for_delayed=None is a NoneType, not a wait."),
        ("5", "wait_for_delayed='5' is a str, not a wait."),
        (True, "wait_for_delayed=True is a bool, not a wait."),
        ([5], "wait_for_delayed=[5] is a list, not a wait."),
    ],
)
def test_a_wait_for_delayed_of_the_wrong_type_is_a_type_error(given: object, named: str) -> None:
    with pytest.raises(TypeError) as raised:
        drain(wait_for_delayed=given)  # type: ignore[arg-type]
    assert str(raised.value) == f"{named} {WAIT}"


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (None, "max_tasks=None is a NoneType, not a number of tasks."),
        ("5", "max_tasks='5' is a str, not a number of tasks."),
        (5.0, "max_tasks=5.0 is a float, not a number of tasks."),
    ],
)
def test_a_max_tasks_of_the_wrong_type_names_the_type_it_takes(given: object, named: str) -> None:
    with pytest.raises(TypeError) as raised:
        drain(max_tasks=given)  # type: ignore[arg-type]
    assert str(raised.value) == f"{named} Pass an int, 1 or more."


@pytest.mark.parametrize("given", [-1, -0.5, math.nan, math.inf, timedelta(seconds=-1)])
def test_a_wait_of_the_right_type_out_of_range_is_still_a_value_error(given: object) -> None:
    with pytest.raises(ValueError, match=r"is not a wait\. Pass 0 or more seconds, or a "):
        drain(wait_for_delayed=given)  # type: ignore[arg-type]
