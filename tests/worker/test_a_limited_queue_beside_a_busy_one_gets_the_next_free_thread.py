"""A queue with a limit beside a busy queue without one gets the next thread freed, not the one
after the busy queue runs dry (docs/schedules.md, Per-queue limits).

Its tasks are reserved only for a runner the process has free, and the busy queue's read-ahead
kept every thread taken: a task of the limited queue waited until the whole backlog of the other
had run, where a task of an unlimited queue waits behind the read-ahead alone.
"""

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task
from tests.support import Command, running, wait_until

PREFETCH = 2
BACKLOG = 40  # tasks of the busy queue behind the first
# How long each of them works: long enough that the read-ahead never runs dry between two
# (the limited queue's task got in by that chance alone), short enough for a quick test.
BUSY_S = 0.01
# Two slots: the first task's may still be held by its result on the way to Redis when the
# second is asked for, and a full limit is looked at again only after LIMIT_RECHECK_S.
LIMITS = [{"concurrency": 2}, {"rate": "1000/s"}]


@task
def logged(log_path: str, name: str, release: str = "", seconds: float = 0.0) -> None:
    """Append ``name`` to ``log_path``, then work for ``seconds``; with ``release``, then hold
    the thread until that file exists (at most a minute)."""
    with open(log_path, "a") as log:
        log.write(f"{name}\n")
    time.sleep(seconds)  # the task's own work, not test synchronisation
    deadline = time.monotonic() + 60
    while release and not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the task's own work: waiting for the test to let it go


@pytest.fixture
def tasks_options(request: pytest.FixtureRequest) -> dict[str, object]:
    return {"queue_limits": {"emails": request.param}}


@pytest.mark.parametrize("tasks_options", LIMITS, indirect=True, ids=["concurrency", "rate"])
def test_a_limited_queues_task_waits_behind_the_read_ahead_alone(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    tasks_options: dict[str, object],
) -> None:
    log, release = tmp_path / "ran.log", tmp_path / "release"
    logged.enqueue(str(log), "holder", str(release))  # holds the one thread while all is read
    backlog = [((str(log), f"busy-{n}", "", BUSY_S), {}) for n in range(BACKLOG)]
    backend.enqueue_many(logged, backlog)
    for name in ("limited-first", "limited-second"):  # the first shows the queue's lane
        logged.using(queue_name="emails").enqueue(str(log), name)
    one_thread = ("--threads", "1", "--prefetch", str(PREFETCH))
    command = start_worker(
        *one_thread, "--queue", "default", "--queue", "emails", options=tasks_options
    )
    with running(command):
        ran = lambda: log.read_text().split() if log.exists() else []  # noqa: E731
        wait_until(lambda: "holder" in ran(), "the holder started")
        release.touch()
        wait_until(lambda: "limited-second" in ran(), "the limited queue's second task ran")
    order = ran()
    busy_before = [name for name in order[: order.index("limited-second")] if "busy" in name]
    assert len(busy_before) <= PREFETCH, order  # the read-ahead at most, never the backlog
