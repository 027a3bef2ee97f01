"""A recycling process (--max-tasks, --max-memory) reports only the worker threads still
running a task: the others ended when it stopped taking tasks.

It reported its whole pool until it exited, however long its last task ran, so the
``threadmill_worker_threads`` gauge counted a ``--threads 4`` worker as 8 threads (the old
pool beside its replacement's) for as long as one task ran on.
"""

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect.source import Source
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.observability.prometheus import exposition
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import WorkerPool
from django_threadmill.worker.sizer import PoolLimits, PoolSizer
from tests.support import Command, wait_until

from . import tasks
from .test_pool import StubThread


def status(result: TaskResult) -> TaskResultStatus:
    result.refresh()
    return result.status


def worker_threads(backend: ThreadmillTaskBackend) -> float:
    """Scrape the backend's metrics, as /threadmill/metrics does; return the gauge."""
    body = exposition([Source(backend.broker, frozenset(backend.queues))]).decode()
    return next(
        sample.value
        for family in text_string_to_metric_families(body)
        if family.name == "threadmill_worker_threads"
        for sample in family.samples
    )


def test_the_gauge_counts_the_recycling_pool_by_the_threads_still_running(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    long = tasks.wait_for_file.enqueue(str(tmp_path / "long may end"))
    short = tasks.wait_for_file.enqueue(str(tmp_path / "short may end"))
    # lease_ttl 1 s: each process reports its threads every third of a second.
    worker = start_worker("--threads", "4", "--max-tasks", "1", lease_ttl_s=1.0)
    wait_until(
        lambda: status(long) == status(short) == TaskResultStatus.RUNNING, "both tasks running"
    )
    (tmp_path / "short may end").touch()  # the process's first task: it recycles
    worker.wait_for_log(r"Recycling once 1 running task finish")
    worker.wait_for_log(r"Worker process spawned slot=0 pid=\d+[\s\S]*Worker process spawned")
    try:
        # The replacement's 4, and the one thread of the old process running the long task.
        wait_until(lambda: worker_threads(backend) == 5, "the gauge reading 5", timeout_s=15)
    finally:
        (tmp_path / "long may end").touch()
    worker.wait_for_log(r"Worker process recycled slot=0")
    assert status(long) == TaskResultStatus.SUCCESSFUL
    assert long.attempts == 1


def test_a_recycling_pool_counts_its_busy_threads_and_no_backlog_to_grow_for() -> None:
    """Once the buffer closed, the idle threads end and the pool is its busy ones; the turn
    the close leaves in the buffer is no task waiting, or the pool's next looks (before the
    process's stop reaches it) saw every thread busy with a task waiting, and grew."""
    gate = threading.Event()
    buffer = TaskBuffer(4, lambda reservation: False)
    pool = WorkerPool(
        lambda n: StubThread(gate.wait if n == 1 else lambda: None),  # type: ignore[arg-type,return-value]
        buffer,
        lambda live: live,
    )
    pool.add(4)
    pool.threads[0].busy = True
    buffer.close()
    try:
        for thread in pool.threads[1:]:
            thread.join(5)
        sizer = PoolSizer(PoolLimits(min_threads=1, max_threads=8, target_wait_s=0.05, idle_s=60))
        look = pool.sample(cpu_s=0.0)
        assert (look.threads, look.busy, look.waiting) == (1, 1, 0)
        # Looks a tenth of a second apart: twice --target-wait, the wait before a step.
        looks = [replace(look, at=look.at + n / 10) for n in range(3)]
        assert [sizer.decide(look)[0] for look in looks] == [0, 0, 0]
    finally:
        gate.set()
        pool.threads[0].join(5)
