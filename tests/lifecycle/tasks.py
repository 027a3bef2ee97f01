"""Tasks for the lifecycle tests, at module level so workers and ``load_task`` import them."""

import time
from datetime import timedelta
from pathlib import Path

from django_threadmill.compat import TaskContext
from django_threadmill.retry import ExponentialBackoff, RetryContext
from django_threadmill.task import task

# No wait between attempts: the retry tests run at the speed of the worker, not of a clock.
NO_WAIT = ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)


@task(takes_context=True, retry=NO_WAIT)
def flaky(context: TaskContext, fail_times: int) -> int:
    """Fail the first ``fail_times`` attempts, then return the attempt number."""
    if context.attempt <= fail_times:
        raise ValueError(f"attempt {context.attempt} fails on purpose")
    return context.attempt


@task(retry=NO_WAIT)
def retried() -> None:
    """Carry a policy that retries at once: the lease tests expire it while it runs."""


@task
def plain() -> None:
    """Carry no policy: a lost attempt fails."""


def every_ten_seconds(context: RetryContext) -> timedelta | None:
    """Retry forever, every ten seconds: a custom callable policy."""
    return timedelta(seconds=10)


@task(retry=every_ten_seconds)
def custom_policy() -> None:
    """Carry a custom callable policy."""


@task(queue_name="reports")
def hang(marker: str) -> None:
    """Write ``marker`` to say the attempt started, then run until the worker is killed."""
    Path(marker).write_text("started")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)  # this task stands for long work; the test SIGKILLs its worker
