"""A --burst worker starts a rate-limited queue's tasks at the rate while a long task of
another queue runs (docs/schedules.md, Per-queue limits; docs/worker.md, --burst).

A burst round that reserved nothing while work was running waited for a result to land, up to
5 s, whatever the round had found due: the rate's next start 200 ms off, or ready tasks. Its
tasks at 5/s started 5 s apart, each at the end of such a wait, beside a task that lands no
result until it ends. A non-burst worker looks again at the due time.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.support import Command, wait_until

from .tasks import hold_until, stamp

LIMITS: dict[str, object] = {"queue_limits": {"emails": {"rate": "5/s"}}}
# Two more starts at 5/s take 0.4 s; the wait that held each back took 5 s.
DEADLINE_S = 3


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def succeeded(results: list[TaskResult]) -> int:
    """Return how many of ``results`` are SUCCESSFUL now."""
    for result in results:
        result.refresh()
    return sum(result.status == TaskResultStatus.SUCCESSFUL for result in results)


def test_a_burst_starts_rate_limited_tasks_at_the_rate_beside_a_long_task(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    marker, release = tmp_path / "marker", tmp_path / "release"
    holder = hold_until.enqueue(str(marker), str(release))
    stamps = [stamp.enqueue(str(tmp_path / "stamps.log")) for _ in range(3)]
    args = ("--processes", "0", "--burst", "--queue", "reports", "--queue", "emails")
    burst = start_worker(*args, "--threads", "4", options=LIMITS)
    try:
        wait_until(lambda: succeeded(stamps) >= 1, "the first rate-limited task running")
        wait_until(
            lambda: succeeded(stamps) == 3,
            "the other two rate-limited tasks running at the rate",
            DEADLINE_S,
        )
        holder.refresh()
        assert holder.status == TaskResultStatus.RUNNING, "they ran once the holder let go"
    finally:
        release.touch()
    assert burst.wait() == 0, burst.log
