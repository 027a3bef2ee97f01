"""rate "20/s": no more than 20 tasks of the queue start in any second, across processes."""

import bisect
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker.tasks import square

from .tasks import stamp

LIMITS = {"queue_limits": {"emails": {"rate": "20/s"}}}
TASKS = 50
OTHERS = 200  # tasks of an unlimited queue served by the same workers meanwhile


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def most_in_any_second(starts: list[float]) -> int:
    """Return the most start times in any half-open window [t, t + 1 s)."""
    starts = sorted(starts)
    return max(bisect.bisect_left(starts, t + 1.0) - i for i, t in enumerate(starts))


def test_at_most_twenty_start_in_any_second(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    log = tmp_path / "starts.log"
    limited = backend.enqueue_many(stamp, [((str(log),), {}) for _ in range(TASKS)])
    others = backend.enqueue_many(square, [((n,), {}) for n in range(OTHERS)])
    worker = start_worker("--processes", "2", "--threads", "4", options=LIMITS)

    def all_started() -> bool:
        return log.exists() and len(log.read_text().splitlines()) == TASKS

    wait_until(all_started, "every rate-limited task started", 30)
    starts = [float(line) for line in log.read_text().splitlines()]
    assert most_in_any_second(starts) <= 20
    for result in [*limited, *others]:
        wait_until(lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL, "ack")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
