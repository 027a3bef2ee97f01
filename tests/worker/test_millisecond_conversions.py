"""Durations become whole milliseconds exactly: ``int(seconds * 1000)`` made some a ms short.

A float product lands a hair below the whole ms as often as on it (1.001 s is
1000.9999999999999 ms), so a retry of ``timedelta(milliseconds=1001)`` waited 1000 ms, a
``lease_ttl`` of 1.001 s was a lease of 1000 ms and a ``result_ttl`` of 2.002 s kept results
2001 ms.
"""

from datetime import timedelta

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Lease, Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.conf.durations import whole_ms
from django_threadmill.conf.settings import read_settings
from django_threadmill.retry import RetryContext
from django_threadmill.task import task
from django_threadmill.testing.drain import _horizon_ms, drain
from django_threadmill.worker.outcome import failed

# Every whole ms up to 5 s: dozens came out a ms short through the float product (1001, 2002, 4004).
MILLISECONDS = range(1, 5001)


def test_every_whole_ms_is_kept_from_seconds_and_from_a_timedelta() -> None:
    assert [whole_ms(ms / 1000) for ms in MILLISECONDS] == list(MILLISECONDS)
    assert [whole_ms(timedelta(milliseconds=ms)) for ms in MILLISECONDS] == list(MILLISECONDS)


@pytest.mark.parametrize(
    ("value", "ms"),
    [(timedelta(milliseconds=1, microseconds=999), 1), (0.001999, 1), (1.0009999, 1001), (0, 0)],
)
def test_a_part_of_a_millisecond_is_dropped(value: float | timedelta, ms: int) -> None:
    assert whole_ms(value) == ms


def wait_the_given(context: RetryContext) -> timedelta:
    """Retry after as many ms as the task's one argument says."""
    return timedelta(milliseconds=context.task_result.args[0])


@task(retry=wait_the_given)
def fails(ms: int) -> None:
    raise ValueError(ms)


@pytest.mark.parametrize("ms", [1001, 2002, 4007])
def test_a_retry_waits_the_milliseconds_its_policy_gave(
    backend: ThreadmillTaskBackend, ms: int
) -> None:
    """The Finish a worker thread, the watchdog and the reaper send for a failed attempt."""
    result = fails.enqueue(ms)
    lease = Lease(task_id=result.id, queue="default", token="1")
    finish = failed(lease, ValueError(ms), now_ms(), result)
    assert (finish.outcome, finish.retry_delay_ms) == (Outcome.RETRY, ms)


def test_lease_result_and_durability_times_are_the_milliseconds_given() -> None:
    settings = read_settings(
        "default",
        {"OPTIONS": {"lease_ttl": 1.001, "result_ttl": 2.002, "durability_timeout": 1.019}},
    )
    assert (settings.lease_ttl_ms, settings.result_ttl_ms, settings.durability_timeout_ms) == (
        1001,
        2002,
        1019,
    )


def test_drain_waits_for_what_is_due_within_the_milliseconds_given() -> None:
    assert _horizon_ms(timedelta(milliseconds=1001)) == 1001
    assert _horizon_ms(2.002) == 2002


def negative_then_forever(context: RetryContext) -> timedelta:
    """Retry the first failure a second in the past, the second after ``timedelta.max``."""
    return timedelta(seconds=-1) if context.attempt == 1 else timedelta.max


@task(retry=negative_then_forever)
def fails_at_the_edges() -> None:
    raise ValueError("edge")


def test_a_negative_wait_retries_at_once_and_the_longest_keeps_the_task_delayed(
    backend: ThreadmillTaskBackend,
) -> None:
    result = fails_at_the_edges.enqueue()
    assert drain(wait_for_delayed=0) == 2
    result.refresh()
    assert (result.status, len(result.errors)) == (TaskResultStatus.READY, 2)
