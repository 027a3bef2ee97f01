"""Fold the outcomes of one ack batch into metric increments: one per field, not per task.

The finish script adds them to ``P:metrics`` (lifetime) and, for the outcomes and run-time
buckets the admin's last hour shows, to ``P:metrics:<minute>`` (kept two hours), in the same
call as the outcomes (docs/observability.md, What it costs). Fields are
``<task path>|<name>``; names are the outcome ("successful", "failed", "retry"), "expired" (a
lease the reaper settled), and histogram buckets ``run:<i>`` and ``wait:<i>`` (not cumulative)
with their sums ``run_ms`` and ``wait_ms``.
"""

import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence

from ..codec.payloads import run_after_ms
from .types import Finish

# Upper bounds of the histogram buckets in seconds; bucket i counts values <= bound i, and
# bucket len(bounds) is +Inf. From 5 ms (an echo task) to an hour (a report).
RUN_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
WAIT_BUCKETS_S = RUN_BUCKETS_S
MAX_TASK_PATHS = 100  # distinct task paths per queue with labels of their own; others: "other"
OTHER_TASKS = "other"  # never a task path: those always contain a dot
MINUTE_TTL_MS = 2 * 3600 * 1000  # minute hashes outlive the hour the admin charts
UNNAMED_TASK = "unknown"  # a finish whose lease did not carry its path (never from acquire)

_RUN_BUCKETS_MS = [bound * 1000 for bound in RUN_BUCKETS_S]
_WAIT_BUCKETS_MS = [bound * 1000 for bound in WAIT_BUCKETS_S]
# Field names per bucket index, built once: the ack writer names two buckets per task.
_RUN_FIELDS = [f"run:{index}" for index in range(len(RUN_BUCKETS_S) + 1)]
_WAIT_FIELDS = [f"wait:{index}" for index in range(len(WAIT_BUCKETS_S) + 1)]


def current_minute() -> int:
    """Return the minute the batch is counted in: the local clock, as it is for display only."""
    return int(time.time() // 60)


def waited_ms(
    payload: str, enqueued_ms: int | None, started_ms: int | None, redis_now_ms: int
) -> int | None:
    """Return how long a first attempt had waited at ``redis_now_ms`` since it became due
    (enqueue, or a later run_after); None for a later attempt, whose wait would count its
    retry delay. Every instant here is on the Redis clock."""
    if started_ms is not None or enqueued_ms is None:
        return None
    return max(0, redis_now_ms - max(enqueued_ms, run_after_ms(payload) or 0))


def increments(finishes: Sequence[Finish], *, reaping: bool) -> list[str | int]:
    """Return the finish script's metric arguments for ``finishes``: per task path,
    ``path, m, n``, then ``m`` pairs of field name and amount for the lifetime and the minute
    hashes (what the admin's last hour shows) and ``n`` for the lifetime hash only."""
    recent: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    lifetime: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for finish in finishes:
        path = finish.lease.task_path or UNNAMED_TASK
        counts, totals = recent[path], lifetime[path]
        counts[finish.outcome.value] += 1
        if reaping:
            totals["expired"] += 1
            continue  # the reaper knows neither when the attempt started nor how long it ran
        run_ms = max(0, finish.finished_ms - finish.started_ms)
        counts[_RUN_FIELDS[bisect_left(_RUN_BUCKETS_MS, run_ms)]] += 1
        totals["run_ms"] += run_ms
        if finish.lease.waited_ms is not None:
            wait_ms = finish.lease.waited_ms + max(0, finish.started_ms - finish.lease.reserved_ms)
            totals[_WAIT_FIELDS[bisect_left(_WAIT_BUCKETS_MS, wait_ms)]] += 1
            totals["wait_ms"] += wait_ms
    args: list[str | int] = []
    for path, counts in recent.items():
        totals = lifetime.get(path, {})
        args += [path, len(counts), len(totals)]
        for name, amount in [*counts.items(), *totals.items()]:
            args += [name, amount]
    return args
