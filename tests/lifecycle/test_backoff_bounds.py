"""ExponentialBackoff at the edges of its numbers: NaN, infinity, delays past timedelta's range,
and a growth past a float's range within the attempts a task may run."""

import logging
import math
import re
from datetime import timedelta

import pytest

from django_threadmill.compat import TaskResult
from django_threadmill.retry import MAX_ATTEMPTS, ExponentialBackoff, RetryContext, retry_delay
from django_threadmill.task import task

from .tasks import plain

pytestmark = pytest.mark.usefixtures("backend")


def after(attempts: int) -> TaskResult:
    """Return a result of ``plain`` that counts ``attempts`` attempts, the failed one included."""
    result = plain.enqueue()
    result.worker_ids.extend(f"w{n}" for n in range(attempts))
    return result


@pytest.mark.parametrize("name", ["factor", "jitter"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_number_that_is_not_finite_is_refused_naming_it(name: str, value: float) -> None:
    shown = repr(value)
    with pytest.raises(ValueError, match=rf"^ExponentialBackoff\({name}={shown}\) must be a fin"):
        ExponentialBackoff(**{name: value})


@pytest.mark.parametrize("name", ["base_delay", "max_delay"])
@pytest.mark.parametrize("value", [math.nan, math.inf, 1e20])
def test_a_delay_no_timedelta_holds_is_refused_naming_it(name: str, value: float) -> None:
    delays = {"base_delay": 0, "max_delay": timedelta.max, name: value}
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"ExponentialBackoff({name}={value!r}) is not a duration a timedelta can hold. Pass "
            "a finite number of seconds, at most 999,999,999 days, or a timedelta."
        ),
    ):
        ExponentialBackoff(**delays)


def test_the_longest_timedelta_is_a_delay() -> None:
    policy = ExponentialBackoff(base_delay=timedelta.max, max_delay=timedelta.max, jitter=0.5)
    assert policy.delay_for(1) <= timedelta.max
    assert policy.delay_for(MAX_ATTEMPTS) == timedelta.max


@pytest.mark.parametrize("factor", [3, 3.0, 10])
def test_growth_past_a_floats_range_waits_max_delay(
    factor: float, caplog: pytest.LogCaptureFixture
) -> None:
    policy = ExponentialBackoff(
        base_delay=1, max_delay=60, factor=factor, jitter=0.1, max_attempts=MAX_ATTEMPTS
    )
    retrying = task(retry=policy)(plain.func)
    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        assert retry_delay(retrying, after(700), ValueError("x")) == timedelta(seconds=60)
    assert caplog.records == []  # not "Retry policy raised": the policy answered


def test_no_base_delay_stays_no_delay_past_a_floats_range() -> None:
    policy = ExponentialBackoff(base_delay=0, factor=10, jitter=0, max_attempts=MAX_ATTEMPTS)
    context = RetryContext(task=plain, task_result=after(999), error=ValueError("x"))
    assert policy(context) == timedelta(0)
