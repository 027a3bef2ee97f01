"""A task whose return value cannot be stored ends FAILED at once, its retry policy unasked.

The task ran to its end: only its return value (not JSON, or above ``max_result_bytes``) could
not be stored, and no new attempt changes that. A task with ``retry=ExponentialBackoff(...)``
was run again and again, each run repeating its work (an email sent, a row written), until its
``max_attempts``, every attempt failing the same way (docs/lifecycle.md, Retries).
"""

from datetime import UTC, datetime

import pytest

from django_threadmill.compat import Task, TaskResultStatus
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task
from django_threadmill.testing import drain

MAX_RESULT_BYTES = 1024
NO_WAIT = ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)
RUNS: list[str] = []  # one entry per run of a task below


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"max_result_bytes": MAX_RESULT_BYTES}


@pytest.fixture(autouse=True)
def no_runs_yet() -> None:
    RUNS.clear()


@task(retry=NO_WAIT)
def returns_a_time() -> datetime:
    RUNS.append("sync")
    return datetime.now(UTC)


@task(retry=NO_WAIT)
async def areturns_a_time() -> datetime:
    RUNS.append("async")
    return datetime.now(UTC)


@task(retry=NO_WAIT)
def returns_too_much() -> str:
    RUNS.append("large")
    return "x" * MAX_RESULT_BYTES


@task(retry=NO_WAIT)
def raises() -> None:
    RUNS.append("raises")
    raise ValueError("raised by the task itself")


@pytest.mark.parametrize(
    ("task_of", "error_class", "words"),
    [
        (returns_a_time, "builtins.TypeError", "returned a datetime, which is not JSON"),
        (areturns_a_time, "builtins.TypeError", "returned a datetime, which is not JSON"),
        (returns_too_much, "builtins.ValueError", f"above max_result_bytes={MAX_RESULT_BYTES}"),
    ],
    ids=["not-json", "not-json-async", "too-large"],
)
def test_a_return_value_that_cannot_be_stored_fails_its_task_after_one_run(
    task_of: Task, error_class: str, words: str
) -> None:
    result = task_of.enqueue()
    assert drain() == 1
    result.refresh()
    assert len(RUNS) == 1
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 1
    [error] = result.errors
    assert error.exception_class_path == error_class
    assert words in error.traceback


def test_an_error_the_task_raises_is_still_retried_by_its_policy() -> None:
    result = raises.enqueue()
    assert drain() == 3
    result.refresh()
    assert RUNS == ["raises"] * 3
    assert (result.status, result.attempts, len(result.errors)) == (TaskResultStatus.FAILED, 3, 3)
