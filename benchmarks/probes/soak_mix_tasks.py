"""The tasks of the mixed soak (``benchmarks.probes.soak_mix``), and its in-worker memory report.

Each task stands for one kind of work whose per-task state a worker process could keep by
mistake: errors with long chained tracebacks, retries, progress reports, async tasks (some
cancelled by ``--task-timeout``), sync tasks whose thread the timeout abandons, workflow steps,
unique tasks, 100 KB arguments and results, tasks that enqueue tasks, tasks that take their
context.

``memory_report`` runs in the worker and returns its live objects counted by type, the
difference from the first report. With ``THREADMILL_SOAK_TRACEMALLOC=<frames>`` in the worker's
environment, tracemalloc starts when this module is imported (the first task the process runs)
and each report also returns the allocation sites that grew most since the first one.
"""

import asyncio
import gc
import os
import threading
import time
import tracemalloc
from collections import Counter
from datetime import timedelta
from typing import Any

from django_threadmill.compat import TaskContext
from django_threadmill.progress import report_progress
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task

TRACE_FRAMES = int(os.environ.get("THREADMILL_SOAK_TRACEMALLOC", "0"))
if TRACE_FRAMES:
    tracemalloc.start(TRACE_FRAMES)

BLOB_CHARS = 100_000  # characters of a large argument and of a large result
DEPTH = 60  # frames of a failing task's traceback


@task
def echo(value: Any) -> Any:
    return value


@task
def add(a: int, b: int) -> int:
    return a + b


@task
def total(values: list[int]) -> int:
    return sum(values)


@task
def big(blob: str) -> str:
    """Take 100 KB and return 100 KB."""
    return blob[::-1]


def _descend(depth: int, ballast: str) -> None:
    """Recurse ``depth`` frames, each holding its own copy of ``ballast``, then raise."""
    local_copy = ballast + str(depth)  # a frame local the traceback keeps alive
    if depth:
        _descend(depth - 1, ballast)
        return
    try:
        raise KeyError(f"inner {len(local_copy)}")
    except KeyError as exc:
        raise ValueError("outer: " + "why " * 500) from exc


@task
def deep_fail(n: int) -> None:
    """Fail with a chained exception under DEPTH frames, each holding 1 KB."""
    _descend(DEPTH, "x" * 1000 + str(n))


@task(
    takes_context=True,
    retry=ExponentialBackoff(base_delay=timedelta(milliseconds=20), jitter=0, max_attempts=3),
)
def flaky(context: TaskContext, n: int) -> int:
    """Fail twice, then succeed: two retries with backoff."""
    if context.attempt < 3:
        raise ConnectionError(f"attempt {context.attempt} of task {n}: upstream not ready")
    return context.attempt


@task(takes_context=True)
def reporting(context: TaskContext, steps: int) -> int:
    for done in range(1, steps + 1):
        report_progress(context, done, steps, note=f"step {done}")
    return steps


@task(takes_context=True)
def with_context(context: TaskContext) -> dict[str, Any]:
    return {"attempt": context.attempt, "id": context.task_result.id}


@task
async def async_quick(n: int) -> int:
    await asyncio.sleep(0.001)
    return n


@task
async def async_fail(n: int) -> None:
    await asyncio.sleep(0)
    raise RuntimeError(f"async task {n} failed")


@task
def overrun(seconds: float) -> float:
    """Sleep past ``--task-timeout``: the worker abandons the thread and starts another."""
    time.sleep(seconds)  # stands for work that takes too long
    return seconds


@task
async def async_spawner(n: int) -> str:
    """Enqueue another task from inside an async task."""
    return (await echo.aenqueue(n)).id


@task
async def async_hang(n: int) -> int:
    """Sleep past ``--task-timeout``: the worker cancels it."""
    await asyncio.sleep(3600)
    return n


def _by_first_argument(args: list[Any], kwargs: dict[str, Any]) -> str:
    return str(args[0])


@task(unique_for=timedelta(seconds=30), unique_key=_by_first_argument)
def unique(key: str) -> str:
    return key


@task
def spawner(n: int) -> str:
    """Enqueue another task from inside a task."""
    return echo.enqueue(n).id


_baseline: Counter[str] | None = None
_first_snapshot: tracemalloc.Snapshot | None = None
_report_lock = threading.Lock()


def _objects_by_type() -> Counter[str]:
    gc.collect()
    return Counter(type(item).__qualname__ for item in gc.get_objects())


@task
def memory_report(top: int = 15) -> dict[str, Any]:
    """Return the live object types that grew most since the first report (and, under
    THREADMILL_SOAK_TRACEMALLOC, the allocation sites)."""
    global _baseline, _first_snapshot
    with _report_lock:
        counts = _objects_by_type()
        if _baseline is None:
            _baseline = counts
        grown = counts.copy()
        grown.subtract(_baseline)
        report: dict[str, Any] = {
            "objects": sum(counts.values()),
            "grown": [[name, n] for name, n in grown.most_common(top) if n > 0],
        }
        if TRACE_FRAMES:
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)]
            )
            if _first_snapshot is None:
                _first_snapshot = snapshot
            diff = snapshot.compare_to(_first_snapshot, "traceback")
            report["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
            report["sites"] = [
                {"kb": round(stat.size_diff / 1024), "count": stat.count_diff,
                 "where": stat.traceback.format()[-2 * TRACE_FRAMES :]}
                for stat in diff[:top]
                if stat.size_diff > 0
            ]  # fmt: skip
        return report
