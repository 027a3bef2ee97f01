"""A recycle makes no Redis call in the thread whose task set it off: the process's stop wakes
the prefetcher and hands the unstarted tasks back, each call in a thread of its own
(docs/worker.md, Recycling).

An ``async def`` task that reached --max-tasks (or --max-memory) began the recycle on the event
loop's thread, which then sent the prefetcher's wake token and the release itself. With Redis
silent (paused, or packets dropped) each call held the loop for socket_timeout (10 s by
default): every other async task of the process stood still, and the loop monitor blamed the
task that had just ended ("Event loop blocked task_id=..."; past --task-timeout, "Event loop
held past --task-timeout ..., recycling", the async tasks still running given only the grace
period).

The real ``threadmill_worker`` in a subprocess, on a redis-server of the test's own that the
test pauses (SIGSTOP). The tasks wait for files the test creates: no timing involved.
"""

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus, task
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until

SOCKET_TIMEOUT_S = 5  # how long each call waits for the paused Redis
WAIT_S = 60.0  # a bound on each wait, never reached when the test passes


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


@task
async def waits_for(folder: str, name: str) -> str:
    """Say it started, await until ``<name>.go`` exists (polled on the loop), say it ended."""
    Path(folder, f"{name}.started").touch()
    while not Path(folder, f"{name}.go").exists():
        await asyncio.sleep(0.01)
    Path(folder, f"{name}.ended").touch()
    return name


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


@pytest.mark.timeout(150)
def test_the_other_async_tasks_run_on_while_the_recycle_they_share_a_loop_with_waits_for_redis(
    own_redis: RedisProcess, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    first = waits_for.enqueue(str(tmp_path), "first")
    other = waits_for.enqueue(str(tmp_path), "other")
    worker = start_worker(
        "--threads", "1", "--max-tasks", "1", options={"socket_timeout": SOCKET_TIMEOUT_S}
    )
    wait_until(
        lambda: status(first) == status(other) == TaskResultStatus.RUNNING, "both tasks running"
    )
    with paused(own_redis):
        (tmp_path / "first.go").touch()  # it ends: the process recycles, from the event loop
        worker.wait_for_log(r"Worker process recycling slot=0 pid=\d+", WAIT_S)
        (tmp_path / "other.go").touch()
        wait_until(
            lambda: (tmp_path / "other.ended").exists(),
            "the other async task ending while Redis is silent",
            WAIT_S,
        )
    worker.wait_for_log(r"Worker process recycled slot=0 pid=\d+", WAIT_S)
    wait_until(lambda: status(other) == TaskResultStatus.SUCCESSFUL, "its outcome written")
    assert other.attempts == 1
    assert status(first) == TaskResultStatus.SUCCESSFUL
    # Blamed on the task that set the recycle off, for the two calls' socket_timeout.
    assert f"Event loop blocked task_id={first.id} " not in worker.log, worker.log
    assert "Event loop held" not in worker.log, worker.log
