"""The elastic pool does not grow on its own retire turns, and option values no process could
run with are refused at start."""

import dataclasses
import re
import threading
from collections.abc import Callable

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.management.commands import threadmill_worker
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import WorkerPool
from django_threadmill.worker.sizer import PoolLimits, PoolSizer
from tests.support import Command

LIMITS = PoolLimits(min_threads=2, max_threads=16, target_wait_s=0.05, idle_s=30.0)


class BusyThread(threading.Thread):
    """A worker thread running one long task until ``gate`` is set: it takes nothing meanwhile."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(target=gate.wait, args=(10,))
        self.abandoned = self.retired = False
        self.busy = True
        self.finished = 0


def test_retire_markers_waiting_behind_busy_threads_are_no_backlog_to_grow_for() -> None:
    """The pool shrank while every thread ran a long task: the threads' retire turns wait in
    the buffer until they finish. Counted as tasks waiting, they made the pool grow by a whole
    step (logged as "tasks waited and every thread was busy") with no task waiting at all."""
    gate = threading.Event()
    buffer = TaskBuffer(16, lambda reservation: False)
    pool = WorkerPool(lambda n: BusyThread(gate), buffer, lambda live: 4 * live)  # type: ignore[arg-type,return-value]
    pool.add(4)
    try:
        pool.retire(2)
        sizer = PoolSizer(LIMITS)
        looks = [dataclasses.replace(pool.sample(0.0), at=n * 0.025) for n in range(8)]
        assert looks[-1].waiting == 0
        assert [sizer.decide(look)[0] for look in looks] == [0] * 8
    finally:
        gate.set()
        for thread in pool.threads:
            thread.join(5)


@pytest.fixture
def no_supervisor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test whose worker would start: its options should have been refused first."""

    def started(*args: object) -> None:
        raise AssertionError("the worker started: its options were not refused")

    monkeypatch.setattr(threadmill_worker, "Supervisor", started)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--threads", "1000000"],
            "--threads 1000000 is above the ceiling of 10000 threads per process",
        ),
        (
            ["--threads", "10001", "--max-threads", "20000"],
            "--threads 10001 is above the ceiling of 10000 threads per process",
        ),
        (  # the pool grew until the system refused threads, leaving none for the rest
            ["--threads", "4", "--max-threads", "10000000"],
            "--max-threads 10000000 is above the ceiling of 10000 threads per process",
        ),
        (  # the loop took every ready async task of its queues, each holding a lease
            ["--async-concurrency", "10000000"],
            "--async-concurrency 10000000 is above the ceiling of 10000 async tasks at once",
        ),
        (  # the supervisor built a slot per process first: this one never finished
            ["--processes", "99999999999999999999"],
            "--processes 99999999999999999999 is above the ceiling of 1000 worker processes",
        ),
    ],
)
@pytest.mark.usefixtures("logging_put_back", "no_supervisor")
def test_a_count_past_its_ceiling_is_refused_before_anything_starts(
    args: list[str], message: str
) -> None:
    """--threads: every process built that many threads at once (3 KB of objects each: 3 GB
    for a million), failed to start them at the system's limit, and was restarted to fail
    again, until the supervisor gave up minutes later. The others were taken without a word."""
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("threadmill_worker", *args)


@pytest.mark.parametrize("value", ["512M", "512MB", "1G", "1.5"])
def test_max_memory_with_a_unit_is_refused_with_the_number_to_give(
    value: str, start_worker: Callable[..., Command]
) -> None:
    command = start_worker("--max-memory", value)
    assert command.wait() == 2, command.log
    assert command.log.splitlines()[-1] == (
        f"manage.py threadmill_worker: error: argument --max-memory: {value!r} is not a whole "
        "number of MiB. Give the number alone: --max-memory 512 for 512 MiB, 1024 for 1 GiB."
    )
