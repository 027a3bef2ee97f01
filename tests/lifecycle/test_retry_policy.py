"""ExponentialBackoff and retry_delay: the decision the worker and the reaper both ask for."""

import json
import logging
from dataclasses import FrozenInstanceError, replace
from datetime import timedelta

import pytest

from django_threadmill.codec.results import parse_error
from django_threadmill.compat import Task, TaskResult
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.retry import MAX_ATTEMPTS, ExponentialBackoff, RetryContext, retry_delay

from .tasks import custom_policy, flaky, plain

pytestmark = pytest.mark.usefixtures("backend")


def result_after(task: Task, attempts: int) -> TaskResult:
    """Return a TaskResult whose ``attempts`` counts ``attempts`` (the failed one included)."""
    result = task.enqueue(1) if task.takes_context else task.enqueue()
    result.worker_ids.extend(f"w{n}" for n in range(attempts))
    return result


def context(attempts: int, error: BaseException | None = None) -> RetryContext:
    return RetryContext(
        task=flaky, task_result=result_after(flaky, attempts), error=error or ValueError("x")
    )


def test_delay_grows_by_factor_and_stops_at_max_delay() -> None:
    policy = ExponentialBackoff(base_delay=1, max_delay=5, factor=2, jitter=0, max_attempts=10)
    assert [policy.delay_for(n).total_seconds() for n in range(1, 6)] == [1, 2, 4, 5, 5]


def test_jitter_stays_within_its_fraction_and_below_max_delay() -> None:
    policy = ExponentialBackoff(base_delay=10, max_delay=10.5, jitter=0.1)
    delays = [policy.delay_for(1).total_seconds() for _ in range(200)]
    assert all(9 <= delay <= 10.5 for delay in delays)
    assert len(set(delays)) > 1


def test_policy_retries_until_max_attempts() -> None:
    policy = ExponentialBackoff(base_delay=timedelta(seconds=3), jitter=0, max_attempts=3)
    assert policy(context(1)) == timedelta(seconds=3)
    assert policy(context(2)) == timedelta(seconds=6)
    assert policy(context(3)) is None


def test_policy_retries_only_errors_listed_in_retry_on() -> None:
    policy = ExponentialBackoff(jitter=0, retry_on=(ConnectionError, LeaseExpired))
    assert policy(context(1, ConnectionResetError())) == timedelta(seconds=1)
    assert policy(context(1, LeaseExpired("lost"))) == timedelta(seconds=1)
    assert policy(context(1, ValueError())) is None


def test_default_policy_does_not_retry_system_exit() -> None:
    assert ExponentialBackoff()(context(1, SystemExit(1))) is None
    assert ExponentialBackoff()(context(1, KeyboardInterrupt())) is None


def test_policy_is_frozen_and_round_trips_through_json() -> None:
    policy = ExponentialBackoff(
        base_delay=0.5,
        max_delay=60,
        factor=3,
        jitter=0.2,
        max_attempts=7,
        retry_on=(ConnectionError, LeaseExpired),
    )
    data = json.loads(json.dumps(policy.to_dict()))
    assert data["retry_on"] == [
        "builtins.ConnectionError",
        "django_threadmill.exceptions.LeaseExpired",
    ]
    assert ExponentialBackoff.from_dict(data) == policy
    with pytest.raises(FrozenInstanceError):
        policy.max_attempts = 1  # type: ignore[misc]


def test_from_dict_refuses_a_foreign_dict_and_a_non_exception() -> None:
    with pytest.raises(ValueError, match=r"was not written by ExponentialBackoff\.to_dict"):
        ExponentialBackoff.from_dict({"kind": "linear"})
    data = ExponentialBackoff().to_dict() | {"retry_on": ["os.path.join"]}
    with pytest.raises(ValueError, match=r"'os\.path\.join' is not an exception class"):
        ExponentialBackoff.from_dict(data)


def test_from_dict_names_the_fields_a_dict_lacks() -> None:
    """It raised a bare KeyError('factor'), naming neither the dict nor the fix."""
    data = ExponentialBackoff().to_dict()
    del data["factor"], data["retry_on"]
    with pytest.raises(ValueError, match=r"^Retry policy dict has no 'factor', 'retry_on': ") as no:
        ExponentialBackoff.from_dict(data)
    assert str(no.value).endswith("to_dict() writes every field. Pass the dict it wrote, whole.")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"base_delay": "1s"}, TypeError, "base_delay='1s'\\) is not a duration"),
        ({"base_delay": -1}, ValueError, "base_delay=-1\\) is negative"),
        ({"base_delay": 10, "max_delay": 5}, ValueError, "max_delay=0:00:05 is below"),
        ({"factor": 0.5}, ValueError, "factor=0.5\\) must be 1 or more"),
        ({"jitter": 2}, ValueError, "jitter=2\\) must be between 0 and 1"),
        ({"jitter": "10%"}, TypeError, "jitter='10%'\\) must be a number"),
        ({"max_attempts": 0}, ValueError, "max_attempts=0\\) must be between 1 and 1000"),
        ({"max_attempts": 1001}, ValueError, "1000 is the most attempts a task runs"),
        ({"max_attempts": 2.5}, TypeError, "max_attempts=2.5\\) must be a whole number"),
        ({"retry_on": (ValueError, "x")}, TypeError, "holds 'x', which is not an exception"),
    ],
)
def test_invalid_settings_raise_naming_the_fix(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ExponentialBackoff(**kwargs)  # type: ignore[arg-type]


def test_retry_delay_asks_the_task_policy() -> None:
    assert retry_delay(flaky, result_after(flaky, 1), ValueError()) == timedelta(0)
    assert retry_delay(flaky, result_after(flaky, 3), ValueError()) is None


def test_the_thousandth_error_is_final_whatever_the_policy_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every attempt's error is kept and read back with the next one: attempts end at
    MAX_ATTEMPTS, where scripts read a larger count as a damaged record."""
    result = result_after(custom_policy, 1)  # its policy retries every error, every time
    result.errors.extend(parse_error("") for _ in range(MAX_ATTEMPTS - 1))
    assert retry_delay(custom_policy, result, ValueError()) is not None
    result.errors.append(parse_error(""))
    assert retry_delay(custom_policy, result, ValueError()) is None
    assert "Task failed its 1000 attempts, the most a task runs" in caplog.text


def test_retry_delay_without_a_policy_records_failed() -> None:
    assert retry_delay(plain, result_after(plain, 1), ValueError()) is None


def test_a_custom_callable_policy_is_used() -> None:
    result = result_after(custom_policy, 9)
    assert retry_delay(custom_policy, result, ValueError()) == timedelta(seconds=10)


def test_a_broken_policy_fails_the_task_not_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    def broken(context: RetryContext) -> timedelta:
        raise RuntimeError("policy bug")

    def wrong_type(context: RetryContext) -> int:
        return 5

    result = result_after(plain, 1)
    with caplog.at_level(logging.ERROR, logger="django_threadmill.retry"):
        assert retry_delay(replace(plain, retry=broken), result, ValueError()) is None
        assert retry_delay(replace(plain, retry=wrong_type), result, ValueError()) is None
    assert [r.getMessage().split(" task_id=")[0] for r in caplog.records] == [
        "Retry policy raised",
        "Retry policy returned an int, not a timedelta or None",
    ]
    assert caplog.records[0].exc_info is not None
