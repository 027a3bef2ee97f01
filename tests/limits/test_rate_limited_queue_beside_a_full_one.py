"""A rate-limited queue's tasks start while another queue of the same worker is at its
concurrency limit, its slot held by a long task the worker runs (docs/schedules.md, Per-queue
limits).

A refill counted the runners it asked the full queue for as taken, though the acquire script
reserves nothing there; the rate-limited queue, left no runner, was only peeked at and told to
wait until a task of the process was done: until the long task ended. The prefetcher counts the
queues of a refill in the order of a set of their names, which the string hash decides, so the
stall came in about half the runs; the worker is started with a hash seed that counts the
full queue first.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResultStatus
from tests.support import Command, running, wait_until

from .tasks import hold_until, stamp, timed
from .test_burst_rate_starts_beside_a_long_task import succeeded

LIMITS: dict[str, object] = {
    "queue_limits": {"reports": {"concurrency": 1}, "emails": {"rate": "5/s"}}
}
# Under this seed Python 3.12 puts "reports" before "emails" in a set of both (their hashes
# fall in slots 4 and 7 of its table), so every refill counts the full queue's runners first.
REPORTS_COUNTED_FIRST = {"PYTHONHASHSEED": "0"}
# Three starts at 5/s take under a second; the holder lets go by itself only after 60 s.
DEADLINE_S = 20


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return LIMITS


def test_rate_limited_tasks_start_while_another_queues_slot_is_held(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    marker, release = tmp_path / "marker", tmp_path / "release"
    args = ("--queue", "reports", "--queue", "emails", "--threads", "4")
    with running(start_worker(*args, options=LIMITS, extra_env=REPORTS_COUNTED_FIRST)):
        holder = hold_until.enqueue(str(marker), str(release))
        try:
            wait_until(marker.exists, "the holder running")
            for _ in range(3):  # they wait for the slot the holder has
                timed.enqueue(str(tmp_path / "timed.log"), 0)
            stamps = [stamp.enqueue(str(tmp_path / "stamps.log")) for _ in range(3)]
            wait_until(
                lambda: succeeded(stamps) == len(stamps),
                "the rate-limited tasks running beside the held slot",
                DEADLINE_S,
            )
            holder.refresh()
            assert holder.status == TaskResultStatus.RUNNING, "they ran once the holder let go"
        finally:
            release.touch()
