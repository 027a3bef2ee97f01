"""Tasks for the drain tests. The drain runs them in the test's own process and thread, so they
report through module state that the tests read directly."""

import asyncio
import os
import signal
import threading
import time
from datetime import timedelta

from asgiref.sync import sync_to_async

from django_threadmill.compat import task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task

runs: list[tuple[str, float]] = []  # (label, monotonic time at start), in the order they ran


@task
def record(label: str) -> int:
    """Note the run; return the thread it ran in."""
    runs.append((label, time.monotonic()))
    return threading.get_ident()


@task(queue_name="reports")
def record_report(label: str) -> None:
    runs.append((label, time.monotonic()))


@task
def take(seconds: float, label: str) -> None:
    """Note the run, then hold the drain for ``seconds`` (a task that works a while)."""
    runs.append((label, time.monotonic()))
    time.sleep(seconds)


@threadmill_task(retry=ExponentialBackoff(base_delay=0.01, max_attempts=3, jitter=0))
def always_fails() -> None:
    raise ConnectionError("the service is down")


@threadmill_task(retry=ExponentialBackoff(base_delay=60, max_attempts=3))
def fails_then_waits_a_minute() -> None:
    raise ConnectionError("the service is down")


@threadmill_task(unique_for=timedelta(minutes=5))
def unique(label: str) -> None:
    runs.append((label, time.monotonic()))


@task
async def threads_seen() -> list[int]:
    """Return the loop's thread and the one a thread-sensitive sync call runs in."""
    return [threading.get_ident(), await sync_to_async(threading.get_ident)()]


class Interrupt(BaseException):
    """What a test framework raises in the test's thread: pytest-timeout's failure, say."""


@task
def interrupted() -> None:
    """Stand for a task cut short by the test's timeout (raised in the test's thread)."""
    raise Interrupt("the test ran out of time")


@task
async def awaits_past_an_interrupt() -> None:
    """Have the test's thread interrupted (its SIGUSR1 handler raises), then await on: the
    thread-sensitive call after the await needs the test's thread, which no longer serves it."""
    os.kill(os.getpid(), signal.SIGUSR1)
    await asyncio.sleep(60)  # the task's own long await, cancelled by the interrupt
    await sync_to_async(threading.get_ident, thread_sensitive=True)()


@task
def spawns_on_commit(label: str) -> None:
    """Note the run, then enqueue a child that waits for the transaction's commit."""
    runs.append((label, time.monotonic()))
    record.using(enqueue_on_commit=True).enqueue(f"{label}'s child")


@task
def leaves_a_transaction_open() -> None:
    """Enter atomic() and return inside it, as a task that forgot its with-block would."""
    from django.db import transaction

    transaction.atomic().__enter__()


class MailServerDown(Exception):
    """What a task's ``on_commit`` callback raises: the mail it sends cannot go."""


def _commit_a_failing_callback() -> None:
    """Register, in a block that completes, a callback that raises once the block commits."""
    from django.db import transaction

    def send_mail() -> None:
        raise MailServerDown("the mail server is down")

    with transaction.atomic():
        transaction.on_commit(send_mail)


@threadmill_task(retry=ExponentialBackoff(base_delay=0.01, max_attempts=2, jitter=0))
def commits_a_failing_callback() -> None:
    """In a worker its commit's callback raises inside it, so it fails, and is retried."""
    _commit_a_failing_callback()


@task
async def acommits_a_failing_callback() -> None:
    """The async twin: the block commits in a thread-sensitive call."""
    await sync_to_async(_commit_a_failing_callback)()


@task
def enqueues_itself() -> None:
    """Enqueue itself again every time it runs: its queue never empties."""
    enqueues_itself.enqueue()


@task
def ping() -> None:
    """Enqueue ``pong``, which enqueues this again: the two never empty their queue."""
    pong.enqueue()


@task
def pong() -> None:
    ping.enqueue()
