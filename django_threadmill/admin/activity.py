"""The last hour of a backend's queues, from the per-minute metric hashes: charts and a table.

The workers count outcomes and run-time buckets per task path and minute (broker/metrics.py,
sent by metrics.lua); this reads 60 small hashes per queue, bounded like every admin read.
"""

import math
from dataclasses import dataclass
from typing import Any

from ..broker.connection import ANOTHER_TYPE_FIX
from ..broker.inspect.counters import PathCounters, histogram, merged, per_minute
from ..broker.inspect.source import Source
from ..broker.metrics import RUN_BUCKETS_S
from .charts import Chart, throughput_chart

ACTIVITY_MINUTES = 60  # the window of the charts and the task path table
REFRESH_S = 5  # the queues page reloads itself this often (a meta refresh keeps its URL)


@dataclass(frozen=True, slots=True, kw_only=True)
class PathLine:
    """One task path of one queue over the window."""

    queue: str
    path: str
    finished: int
    failed: int
    retried: int
    p50_s: float | None  # upper bound of the bucket holding the median; inf: > 1 h; None: none
    p95_s: float | None

    @property
    def failure_percent(self) -> float | None:
        return 100 * self.failed / self.finished if self.finished else None

    @property
    def p50(self) -> str:
        return run_time_label(self.p50_s)

    @property
    def p95(self) -> str:
        return run_time_label(self.p95_s)


def run_time_label(bound_s: float | None) -> str:
    """Show a quantile's bucket bound: "≤ 0.25 s", "> 3600 s" past the last bound (runs over
    an hour), "" with no run time (none finished, or only leases the reaper settled)."""
    if bound_s is None:
        return ""
    if math.isinf(bound_s):
        return f"> {RUN_BUCKETS_S[-1]} s"
    return f"≤ {bound_s} s"


def _outcomes(counters: PathCounters) -> tuple[int, int]:
    ok = sum(fields.get("successful", 0) for fields in counters.values())
    return ok, sum(fields.get("failed", 0) for fields in counters.values())


def _path_lines(queue: str, hour: PathCounters) -> list[PathLine]:
    """Return a line per task path that finished or retried an attempt in ``hour`` (a path
    with only fields written by hand, which count nothing here, gets none)."""
    lines = []
    for path, fields in hour.items():
        run = histogram(fields, "run")
        failed = fields.get("failed", 0)
        if not (fields.get("successful", 0) or failed or fields.get("retry", 0)):
            continue
        lines.append(
            PathLine(
                queue=queue,
                path=path,
                finished=fields.get("successful", 0) + failed,
                failed=failed,
                retried=fields.get("retry", 0),
                p50_s=run.quantile_s(0.5),
                p95_s=run.quantile_s(0.95),
            )
        )
    return lines


def left_out_note(queue: str, keys: list[str]) -> str:
    """Say that ``queue``'s last hour is left out for its metric hashes of another type,
    naming the first key and the fix (the WARNING names each key)."""
    more = f" and {len(keys) - 1} more" if len(keys) > 1 else ""
    verb = "hold" if more else "holds"
    return (
        f"The last hour of {queue} is left out: its key {keys[0]}{more} {verb} another type "
        f"({ANOTHER_TYPE_FIX})."
    )


def activity_context(source: Source, queues: list[str], now_ms: int) -> dict[str, Any]:
    """Return the charts (one per queue) and the task path table of the last hour, and a note
    per queue left out of them (a metric hash of another type)."""
    last_minute = now_ms // 60_000
    found = per_minute(source.inspector, queues, last_minute, ACTIVITY_MINUTES)
    ago = list(range(ACTIVITY_MINUTES - 1, -1, -1))
    charts: list[tuple[str, Chart]] = []
    lines: list[PathLine] = []
    for queue, minutes in found.counters.items():
        charts.append((queue, throughput_chart([_outcomes(m) for m in minutes], ago)))
        lines += _path_lines(queue, merged(minutes))
    lines.sort(key=lambda line: (-line.finished, line.queue, line.path))
    return {
        "charts": charts,
        "paths": lines,
        "minutes": ACTIVITY_MINUTES,
        "left_out": [left_out_note(queue, keys) for queue, keys in found.left_out.items()],
    }
