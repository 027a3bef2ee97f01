"""A task that holds the GIL past its lease from its first instant ends, and runs at most twice.

Such a task (a C call that never lets the GIL go: a regular expression that backtracks, a parser
of a huge document) freezes every thread of its process, the ack writer holding its start notice
(docs/design.md, Start notices wait 20 ms) and the lease keeper included. Its record still says
reserved when its lease lapses, so a reaper hands it back to READY as a reservation never started,
and the worker runs it again, with the same result: before, it ran for good, READY with no
attempt counted and every run's outcome refused (`Ack not recorded`). A process whose run of a
task outlived its lease now writes that task's next start before it runs it, so the next run is an
attempt the reaper sees: it settles it (docs/lifecycle.md, When a worker dies).
"""

import ctypes
import os
import signal

import pytest
import redis

from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.task import task
from tests.support import wait_until, worker

LEASE_TTL_S = 1.0
HOLD_S = 3  # whole seconds of libc's sleep(), three leases


def _runs_key() -> str:
    return f"{os.environ['THREADMILL_KEY_PREFIX']}:test-runs"


@task
def holds_the_gil(seconds: int) -> str:
    """Sleep in C with the GIL held (a PyDLL call keeps it), then note that a run ended."""
    ctypes.PyDLL(None).sleep(seconds)
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        client.rpush(_runs_key(), "ran")
    finally:
        client.close()
    return "done"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": LEASE_TTL_S}


def test_a_task_holding_the_gil_past_its_lease_from_its_start_ends_failed(
    redis_url: str, key_prefix: str, redis_client: redis.Redis
) -> None:
    result = holds_the_gil.enqueue(HOLD_S)
    command = worker(
        redis_url, key_prefix, "--threads", "1", "--reap-interval", "0.2", lease_ttl_s=LEASE_TTL_S
    )
    try:
        wait_until(
            lambda: result.refresh() or result.is_finished,
            "the task ending instead of going back to READY after each run",
            timeout_s=10 * HOLD_S,
        )
        command.signal(signal.SIGTERM)
        assert command.wait() == 0, command.log
    finally:
        command.close()
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class_path for error in result.errors] == [
        f"{LeaseExpired.__module__}.{LeaseExpired.__qualname__}"
    ]
    assert 1 <= redis_client.llen(f"{key_prefix}:test-runs") <= 2
