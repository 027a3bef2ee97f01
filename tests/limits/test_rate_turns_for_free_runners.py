"""A process reserves a rate-limited queue's tasks only for runners it has free
(docs/schedules.md, Per-queue limits).

Reserved ahead, a task waited in the buffer of a process whose every thread was busy, holding
the start turn the acquire script handed it, while an idle process of the fleet waited for
turns: the rate started fewer tasks across processes than it allows, and the task waited for
the busy process's thread however long that took.
"""

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until

from .tasks import hold_until, timed

RATE = {"queue_limits": {"reports": {"rate": "20/s"}}}  # one reservation every 50 ms
TASKS = 3


@pytest.mark.parametrize("holder_queue", ["reports", "emails"], ids=["same-queue", "other-queue"])
def test_an_idle_process_runs_what_a_busy_one_has_no_runner_for(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    holder_queue: str,
) -> None:
    release = tmp_path / "release"
    queues = ("--threads", "1", "--queue", "reports", "--queue", "emails")
    holder = hold_until.using(queue_name=holder_queue)
    held = holder.enqueue(str(tmp_path / "holding"), str(release))
    workers = [start_worker(*queues, options=RATE)]
    try:
        wait_until(lambda: held.refresh() or held.status == TaskResultStatus.RUNNING, "held")
        limited = backend.enqueue_many(
            timed, [((str(tmp_path / "runs.log"), 0), {}) for _ in range(TASKS)]
        )
        workers.append(start_worker(*queues, options=RATE))
        for result in limited:
            wait_until(
                lambda r=result: r.refresh() or r.status == TaskResultStatus.SUCCESSFUL,
                "the idle process ran every task while the busy one's thread was held",
            )
        held.refresh()  # hold_until lets go by itself after a minute: then it ran them
        assert held.status == TaskResultStatus.RUNNING, "tasks waited for the busy thread"
    finally:
        release.touch()
        for worker in workers:
            worker.signal(signal.SIGTERM)
            assert worker.wait() == 0, worker.log
