"""Tasks for the chaos test: each appends one line per execution to a log outside Redis.

The line is ``<task id> <attempt> <pid>``, written with a single ``O_APPEND`` write, so lines
from many processes never interleave and the test can count executions independently of Redis.
"""

import os
import time

from django_threadmill.compat import TaskContext
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task

# Small delays so retries happen during the run, not after it.
RETRY = ExponentialBackoff(base_delay=0.05, max_delay=0.4, jitter=0.1, max_attempts=4)


class ChaosFailure(Exception):
    """Raised on purpose by the failing tasks."""


def record_run(context: TaskContext, log: str) -> None:
    """Append this execution to ``log``: task id, attempt number, pid."""
    line = f"{context.task_result.id} {context.attempt} {os.getpid()}\n".encode()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@task(takes_context=True)
def fast(context: TaskContext, log: str) -> int:
    """Record the run and return the attempt number."""
    record_run(context, log)
    return context.attempt


def _work(context: TaskContext, log: str, seconds: float) -> int:
    record_run(context, log)
    time.sleep(seconds)  # stand-in for real work, long enough to be killed in the middle
    return context.attempt


@task(takes_context=True, queue_name="emails")
def slow(context: TaskContext, log: str, seconds: float) -> int:
    """Work for ``seconds`` with no retry policy: a death mid-run fails it."""
    return _work(context, log, seconds)


@task(takes_context=True, queue_name="emails", retry=RETRY)
def slow_retried(context: TaskContext, log: str, seconds: float) -> int:
    """Work for ``seconds``; a death mid-run is retried by the policy."""
    return _work(context, log, seconds)


@task(takes_context=True)
def failing(context: TaskContext, log: str) -> None:
    """Record the run, then fail with no retry policy."""
    record_run(context, log)
    raise ChaosFailure(f"task {context.task_result.id} fails on purpose")


@task(takes_context=True, retry=RETRY)
def flaky(context: TaskContext, log: str, fail_times: int) -> int:
    """Fail the first ``fail_times`` attempts, then succeed."""
    record_run(context, log)
    if context.attempt <= fail_times:
        raise ChaosFailure(f"attempt {context.attempt} fails on purpose")
    return context.attempt
