"""Leases are renewed while a task runs, so a task longer than lease_ttl is never reaped."""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker import tasks

LEASE_TTL_S = 2.0


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": LEASE_TTL_S}


def test_a_task_four_times_longer_than_its_lease_runs_once(
    redis_url: str, key_prefix: str, tmp_path: Path, start_worker: Callable[..., Command]
) -> None:
    runs = tmp_path / "runs.log"
    long_task = tasks.work_for.enqueue(4 * LEASE_TTL_S, str(runs))
    worker = start_worker("--threads", "2", "--reap-interval", "0.5", lease_ttl_s=LEASE_TTL_S)
    reaper = Command(
        redis_url, key_prefix, "threadmill_reap", "--interval", "0.5", lease_ttl_s=LEASE_TTL_S
    )
    try:
        wait_until(
            lambda: long_task.refresh() or long_task.is_finished,
            "the long task finishing",  # the worker's start-up (up to 24 s loaded) and 8 s
        )
    finally:
        reaper.signal(signal.SIGTERM)
        reaper.wait()
        reaper.close()
    assert long_task.status == TaskResultStatus.SUCCESSFUL
    assert long_task.attempts == 1
    assert runs.read_text() == "started"
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    assert "Lease lost" not in worker.log
    assert "stale" not in worker.log
