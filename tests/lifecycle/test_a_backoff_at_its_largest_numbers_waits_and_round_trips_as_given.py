"""ExponentialBackoff at its largest numbers: a first wait is ``base_delay`` whatever the
factor, and a policy of the longest delays ``to_dict`` writes reads back through
``from_dict``."""

import json
from datetime import timedelta

import pytest

from django_threadmill.retry import ExponentialBackoff


def test_the_first_wait_is_the_base_delay_with_a_factor_past_a_floats_range() -> None:
    """factor ** 0 is 1: an int factor no float holds made every wait max_delay."""
    policy = ExponentialBackoff(
        base_delay=timedelta(seconds=2), max_delay=timedelta(minutes=1), factor=10**400, jitter=0
    )
    assert policy.delay_for(1) == timedelta(seconds=2)
    assert policy.delay_for(2) == timedelta(seconds=60)


@pytest.mark.parametrize("name", ["base_delay", "max_delay"])
def test_the_longest_timedelta_round_trips_through_json(name: str) -> None:
    """to_dict writes timedelta.max as a float of seconds just past it (86,400,000,000,000):
    from_dict raised OverflowError for the policy it wrote."""
    delays = {"base_delay": timedelta(0), "max_delay": timedelta.max, name: timedelta.max}
    policy = ExponentialBackoff(base_delay=delays["base_delay"], max_delay=delays["max_delay"])
    assert ExponentialBackoff.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy


def test_a_dict_with_a_delay_out_of_range_is_refused_naming_it() -> None:
    data = ExponentialBackoff().to_dict() | {"base_delay_s": -1}
    with pytest.raises(ValueError, match=r"^ExponentialBackoff\(base_delay=-1\) is negative"):
        ExponentialBackoff.from_dict(data)
