"""A recycled process whose reserved, never-started tasks Redis did not take back (silent, or
away) says so as a stop does: ``Stopped with work left to the reaper ... unreleased=N``, exit 6,
and a ``--burst`` exits 6 (docs/worker.md, Exit codes).

The recycle released them from the thread whose task reached --max-tasks, and the stop never
counted a release that failed there: the process exited 3, as a clean recycle, and a burst
exited 0 (its queues empty, its tasks run) with those tasks still reserved by the process that
had ended, left to lease expiry and the reaper. Now the process's stop releases them in a
thread of its own, as a stop releases its own, and counts what Redis did not take.

The real ``threadmill_worker`` in a subprocess, on a redis-server of the test's own that the
test pauses (SIGSTOP). The first task waits for a file the test creates: no timing involved.
"""

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.faults.support import paused
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until
from tests.worker import tasks

RESERVED = 3  # the --prefetch: reserved while the first task runs, never started


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


def state(broker: Broker, result: TaskResult) -> str | None:
    return (broker.record(result.id) or {}).get("state")


@pytest.mark.timeout(150)
def test_a_burst_whose_recycle_left_its_unstarted_tasks_reserved_exits_dropped(
    own_redis: RedisProcess, broker: Broker, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    first = tasks.wait_for_file.enqueue(str(tmp_path / "go"))
    worker = start_worker(
        *("--threads", "1", "--prefetch", str(RESERVED), "--max-tasks", "1", "--burst"),
        options={"socket_timeout": 2},
    )
    wait_until(lambda: state(broker, first) == "running", "the first task running")
    rest = [tasks.square.enqueue(n) for n in range(RESERVED)]
    wait_until(lambda: all(state(broker, r) == "reserved" for r in rest), "the rest reserved")
    with paused(own_redis):
        (tmp_path / "go").touch()  # the first task ends: the process recycles
        worker.wait_for_log(rf"ERROR .*Release failed count={RESERVED} ")

    assert worker.wait() == ExitCode.DROPPED, worker.log
    assert re.search(
        rf"ERROR .*Stopped with work left to the reaper unwritten=\d+ unreleased={RESERVED} ",
        worker.log,
    ), worker.log
    assert re.search(
        r"WARNING .*Recycled worker process stopped with work left to the reaper slot=0 ",
        worker.log,
    ), worker.log
    first.refresh()
    assert first.status == TaskResultStatus.SUCCESSFUL
