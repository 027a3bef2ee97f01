"""Read the metric hashes metrics.lua keeps (broker/metrics.py), bounded like every read.

Each queue has one lifetime hash and one hash per minute (two hours kept); both hold at most
``MAX_TASK_PATHS`` + 1 task paths times a fixed set of names, so an HGETALL is bounded.
"""

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from ..connection import ANOTHER_TYPE_FIX, readable_replies
from ..keys import QueueKeys
from ..metrics import OTHER_PATHS, PATH_TTL_MS, RUN_BUCKETS_S, WAIT_BUCKETS_S
from ..raw_replies import RAW, stored_counters
from ..script_errors import reply_of
from .inspector import Inspector

type PathCounters = dict[str, dict[str, int]]  # task path -> field name -> value

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Histogram:
    """Bucket counts (not cumulative; the last is +Inf) and the sum in seconds."""

    bounds_s: tuple[float, ...]
    counts: list[int]
    sum_s: float

    @property
    def count(self) -> int:
        return sum(self.counts)

    def quantile_s(self, q: float) -> float | None:
        """Return the upper bound of the bucket holding quantile ``q``: ``math.inf`` when it is
        past the last bound (not None, which says there is no value at all)."""
        rank = q * self.count
        seen = 0
        for bound, n in zip(self.bounds_s, self.counts, strict=False):
            seen += n
            if n and seen >= rank:
                return bound
        return math.inf if self.count else None


def parse(raw: dict[bytes, bytes]) -> PathCounters:
    """Split the "<path>|<name>" fields of a hash read as bytes into per-path counters; a
    field that is not UTF-8 or not a number (``stored_counters``), or names no task path
    (written by hand: metrics.lua always writes one), is skipped."""
    by_path: PathCounters = defaultdict(dict)
    for field, value in stored_counters(raw).items():
        path, _, name = field.rpartition("|")
        if path:
            by_path[path][name] = value
    return dict(by_path)


def histogram(counters: dict[str, int], name: str) -> Histogram:
    """Return the ``run`` or ``wait`` histogram of one task path."""
    bounds = RUN_BUCKETS_S if name == "run" else WAIT_BUCKETS_S
    counts = [counters.get(f"{name}:{i}", 0) for i in range(len(bounds) + 1)]
    return Histogram(bounds_s=bounds, counts=counts, sum_s=counters.get(f"{name}_ms", 0) / 1000)


def merged(many: Sequence[PathCounters]) -> PathCounters:
    """Return the sum of several counter sets, e.g. the minutes of one hour."""
    total: PathCounters = defaultdict(lambda: defaultdict(int))
    for counters in many:
        for path, fields in counters.items():
            for name, value in fields.items():
                total[path][name] += value
    return {path: dict(fields) for path, fields in total.items()}


def lifetime(inspector: Inspector, queues: Sequence[str], now_ms: int) -> dict[str, PathCounters]:
    """Return the lifetime counters of ``queues``, summed over every shard count each one
    counted under: the inspector's one SMEMBERS (``Inspector.layouts``), then one pipeline
    of an HGETALL and a ZRANGE of its labelled paths (at most ``MAX_TASK_PATHS``) per part
    of the configured count (and, per part of an earlier count, an HGETALL and a
    ZRANGEBYSCORE of its paths).

    No send reaches the parts of an earlier ``queue_shards`` count once its workers stop, so
    their counters stay as they were: summed with the configured count's, a queue's series do
    not fall at a change (read as a reset), the workers still serving the old count are seen,
    and every web process exports the same totals whatever count its settings give
    (docs/scaling.md, Changing the shard count).

    A queue with a part whose metric hash holds another type is left out, with a WARNING
    naming the key: raised, that key failed the scrape of every queue of the backend, and the
    error named no key; summed without that part, the queue's counters would fall (read as a
    reset).
    """
    broker = inspector.broker
    parts = {queue: inspector.parts(queue) for queue in queues}
    earlier = broker.other_parts_in(queues, inspector.layouts)
    stale_to = now_ms - PATH_TTL_MS
    with broker.translated_errors(read=True), inspector.client.pipeline(False) as pipe:
        for queue in queues:
            for part in parts[queue]:
                keys = broker.queue_keys(part)
                pipe.execute_command("HGETALL", keys.metrics, **RAW)
                pipe.execute_command("ZRANGE", keys.metrics_paths, 0, -1, **RAW)
            for part in earlier[queue]:
                keys = broker.queue_keys(part)
                pipe.execute_command("HGETALL", keys.metrics, **RAW)
                pipe.execute_command("ZRANGEBYSCORE", keys.metrics_paths, "-inf", stale_to, **RAW)
        replies = iter(readable_replies(pipe.execute(raise_on_error=False)))
    summed: dict[str, PathCounters] = {}
    for queue in queues:
        configured = [(part, next(replies), next(replies)) for part in parts[queue]]
        kept = [(part, next(replies), next(replies)) for part in earlier[queue]]
        hashes = [(broker.queue_keys(part).metrics, reply) for part, reply, _ in configured + kept]
        if not _unreadable(queue, hashes):
            summed[queue] = _summed(
                [(parse(counters), _names(names)) for _, counters, names in configured],
                [(parse(counters), _names(names) or set()) for _, counters, names in kept],
            )
    return summed


def _unreadable(queue: str, read: list[tuple[str, Any]]) -> list[str]:
    """Return the keys of ``queue``'s metric hashes (each with its HGETALL reply) that hold
    another type, logging each: the queue's counters are then left out."""
    unread = [(key, reply) for key, reply in read if isinstance(reply, redis.ResponseError)]
    for key, reply in unread:
        logger.warning(
            "Metric counters skipped, their key holds another type (" + ANOTHER_TYPE_FIX + "); "
            "the queue's counters are left out, the other queues' are read "
            "queue=%s key=%s error=%s",
            queue,
            key,
            reply_of(reply),
        )
    return [key for key, _ in unread]


def _summed(
    configured: list[tuple[PathCounters, set[str] | None]],
    earlier: list[tuple[PathCounters, set[str]]],
) -> PathCounters:
    """Sum the counters of a queue's configured parts and of its earlier count's parts, each
    with the paths no send counted there for PATH_TTL_MS. Such a path is left out unless the
    configured count has it, as metrics.lua forgets one in a part it sends to: no send forgets
    it in an earlier count's part, and a renamed task's series would never end.

    Each part of the configured count labels the first MAX_TASK_PATHS paths it meets, so two
    shards past that cap may label different ones: a path labelled in one shard and counted as
    "other" in another (``configured`` holds each part's labelled paths, None if unread) is
    summed into "other", never exported short of the runs the other shard counted."""
    current = merged([counters for counters, _ in configured])
    kept = [
        {path: fields for path, fields in counters.items() if path in current or path not in stale}
        for counters, stale in earlier
    ]
    return _folded(merged([current, *kept]), configured)


def _folded(
    counters: PathCounters, configured: list[tuple[PathCounters, set[str] | None]]
) -> PathCounters:
    """Return ``counters`` with every path that a configured part counting "other" does not
    label (it counts that path's runs as "other" too) moved into "other"."""
    full = [labels for part, labels in configured if OTHER_PATHS in part and labels is not None]
    unlabelled = {
        path
        for path in counters
        if path != OTHER_PATHS and any(path not in labels for labels in full)
    }
    if not unlabelled:
        return counters
    other = dict(counters.get(OTHER_PATHS, {}))
    for path in unlabelled:
        for name, value in counters[path].items():
            other[name] = other.get(name, 0) + value
    kept = {path: fields for path, fields in counters.items() if path not in unlabelled}
    return {**kept, OTHER_PATHS: other}


def _names(reply: list[bytes] | Exception) -> set[str] | None:
    """Return the paths a ZRANGE or ZRANGEBYSCORE of ``metrics:paths`` read; None for a key of
    another type (a set of earlier versions, converted at the part's next send, whose paths
    metrics.lua counts as seen now)."""
    if isinstance(reply, Exception):
        return None
    return {name.decode(errors="replace") for name in reply}


@dataclass(frozen=True, slots=True, kw_only=True)
class Minutes:
    """The counters of a window of minutes, per queue; and the queues left out of it."""

    counters: dict[str, list[PathCounters]]  # queue -> one per minute, oldest first
    left_out: dict[str, list[str]]  # queue -> its metric hashes that hold another type


def per_minute(
    inspector: Inspector, queues: Sequence[str], last_minute: int, minutes: int
) -> Minutes:
    """Return, per queue, the counters of each of the ``minutes`` minutes up to ``last_minute``
    (oldest first), summed over every shard count the queue kept keys under, as ``lifetime``
    sums them: one pipelined HGETALL per part and minute.

    A queue with a minute's hash of another type, in any of its parts, is left out, with a
    WARNING naming the key, as ``lifetime`` leaves it out: raised, that key failed the queues
    page's whole block of the backend; summed without it, the queue's hour would read short.
    """
    span = range(last_minute - minutes + 1, last_minute + 1)
    parts = inspector.parts_to_sum(queues, every_count=True)

    def read(pipe: Any, keys: QueueKeys) -> None:
        for minute in span:
            pipe.execute_command("HGETALL", keys.metrics_minute(minute), **RAW)

    replies = inspector.read_parts(parts, read, tolerant=True)
    counters: dict[str, list[PathCounters]] = {}
    left_out: dict[str, list[str]] = {}
    for queue, queue_parts in parts.items():
        shards = [
            [(keys.metrics_minute(minute), next(replies)) for minute in span]
            for keys in map(inspector.broker.queue_keys, queue_parts)
        ]
        if unread := _unreadable(queue, [minute for shard in shards for minute in shard]):
            left_out[queue] = unread
            continue
        # Sum the parts minute by minute: one list of minutes per queue, as when unsharded.
        by_minute = zip(*([parse(reply) for _, reply in shard] for shard in shards), strict=True)
        counters[queue] = [merged(minute) for minute in by_minute]
    return Minutes(counters=counters, left_out=left_out)
