"""A retry policy that raises a ``BaseException`` other than ``KeyboardInterrupt`` (an
``asyncio.CancelledError`` from an async client it calls, a library's own) fails its task, as
one raising ``Exception`` or ``SystemExit`` does: it went through the reaper's pass, which
ended, its task's lease left for the next pass to meet the same error (in a worker it killed
the thread, and the process)."""

import asyncio
import logging
from dataclasses import replace

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.retry import retry_delay
from django_threadmill.worker.reaper import reap_once

from .cancelled_policies import cancelled_policy
from .support import run, wait_for_expiry


def test_the_policy_is_asked_and_its_error_read_as_no_retry(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    result = cancelled_policy.enqueue()
    result.worker_ids.append("w1")
    with caplog.at_level(logging.ERROR, logger="django_threadmill.retry"):
        assert retry_delay(cancelled_policy, result, ValueError("x")) is None
    [record] = caplog.records
    assert record.getMessage() == (
        f"Retry policy raised task_id={result.id} task={cancelled_policy.module_path}; "
        "recording FAILED"
    )
    assert record.exc_info is not None
    assert record.exc_info[0] is asyncio.CancelledError


def test_the_reaper_fails_the_task_and_ends_its_pass(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = cancelled_policy.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)

    assert reap_once(backend).failed == 1

    assert backend.get_result(task_id).status == TaskResultStatus.FAILED


def test_a_keyboard_interrupt_still_interrupts(backend: ThreadmillTaskBackend) -> None:
    """A Ctrl-C that lands while a policy runs in the main thread (``threadmill_reap``)."""

    def interrupted(context: object) -> None:
        raise KeyboardInterrupt

    result = cancelled_policy.enqueue()
    result.worker_ids.append("w1")
    with pytest.raises(KeyboardInterrupt):
        retry_delay(replace(cancelled_policy, retry=interrupted), result, ValueError("x"))
