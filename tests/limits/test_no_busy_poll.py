"""A worker whose limited queue is full waits for a wake token; it does not poll Redis."""

import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.prefetcher import IDLE_BLOCK_S
from tests.support import Command, script_calls, wait_until

from .tasks import hold_until, timed

LIMITS = {"queue_limits": {"reports": {"concurrency": 1}}}
WINDOW_S = 1.0  # measured stretch of idleness
MOST_CALLS = 5  # a lease renewal or a reap may fall in the window; a busy loop makes hundreds


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def test_a_full_queue_costs_no_calls_and_a_finish_wakes_the_worker(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    marker, release = tmp_path / "held", tmp_path / "release"
    holder = hold_until.enqueue(str(marker), str(release))
    waiting = timed.enqueue(str(tmp_path / "after.log"), 0)
    worker = start_worker("--queue", "reports", "--threads", "2", options=LIMITS)
    wait_until(marker.exists, "the only slot taken")

    before = script_calls(redis_client)
    threading.Event().wait(WINDOW_S)  # a measurement window, not synchronisation
    assert script_calls(redis_client) - before <= MOST_CALLS
    assert backend.get_result(waiting.id).status == TaskResultStatus.READY

    release.touch()  # the holder finishes; its finish wakes the worker for the waiting task
    for result in (holder, waiting):  # sooner than an idle worker's longest block: woken
        done = lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL  # noqa: E731
        wait_until(done, "the waiting task ran once the slot was free", IDLE_BLOCK_S / 2)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
