"""Metric counters of finished attempts, tallied in the worker and sent on their own clock.

A finish call records outcomes only; what the metrics count of them (outcomes, retries,
expired leases, run and wait histograms per task path, the queue's lifetime counters) is added
to a ``Tally`` and sent by ``metrics.lua`` about once a second, one HINCRBY per field whatever
the number of tasks: a result that arrives alone costs a finish call, not a finish call and
its metrics (docs/observability.md, What it costs). Fields are ``<task path>|<name>``; names
are the outcome ("successful", "failed", "retry"), "expired" (a lease the reaper settled), and
histogram buckets ``run:<i>`` and ``wait:<i>`` (not cumulative) with their sums ``run_ms`` and
``wait_ms``. The minute a tally is counted in is the Redis minute of the call that sends it.

The done index (the admin's list of finished tasks) is upkeep of the same kind: the ids of a
finish call's final outcomes are tallied with the monotonic time the call recorded them, and
the send adds them to ``P:done`` dated by their age, on the Redis clock of that call.

Counters are not idempotent, so each send is numbered per sender (one ``Tally``: a process's
broker) and metrics.lua records the last number it counted per sender and queue part. A send
whose reply was lost (``MaybeApplied``) is sent again as it was, under its number, and skipped
if it was counted; what the part counts meanwhile waits behind it (docs/observability.md,
What it costs).
"""

import itertools
import logging
import math
import secrets
import threading
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import NamedTuple

from ..codec.payloads import run_after_ms
from ..compat import TaskResult
from ..forks import renew_after_fork
from .types import ExpiredAttempt, Finish, Lease, Outcome

# Upper bounds of the histogram buckets in seconds; bucket i counts values <= bound i, and
# bucket len(bounds) is +Inf. From 5 ms (an echo task) to an hour (a report).
RUN_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
WAIT_BUCKETS_S = RUN_BUCKETS_S
MAX_TASK_PATHS = 100  # task paths per queue labelled by name; metrics.lua counts others as "other"
OTHER_PATHS = "other"  # the label metrics.lua counts the paths past MAX_TASK_PATHS under
# A task path no send counted for this long (ms) gives its label back and its lifetime series
# end (docs/observability.md, Families): five weeks, so a monthly task keeps its own.
PATH_TTL_MS = 35 * 24 * 3600 * 1000
MINUTE_TTL_MS = 2 * 3600 * 1000  # minute hashes outlive the hour the admin charts
UNNAMED_TASK = "unknown"  # a finish whose lease did not carry its path (never from acquire)
# Done index ids a queue part keeps across failed sends (about 9 MB), the newest: counters sum
# in place, but ids are one per task (docs/observability.md, Metrics and the done index).
MAX_UNSENT_DONE_IDS = 100_000
# How long metrics.lua remembers a sender's last send (ms): a send whose reply was lost is
# counted once if sent again within this; the ack writer tries again every second.
SENT_TTL_MS = 3600 * 1000
# How often a sender marks a task path it counts in one shard of a queue as seen in the queue's
# other shards (s): as often as metrics.lua writes a path's time, far within PATH_TTL_MS.
SHARE_PATHS_EVERY_S = 3600

logger = logging.getLogger(__name__)

_RUN_BUCKETS_MS = [bound * 1000 for bound in RUN_BUCKETS_S]
_WAIT_BUCKETS_MS = [bound * 1000 for bound in WAIT_BUCKETS_S]
# Field names per bucket index, built once: the ack writer names two buckets per task.
_RUN_FIELDS = [f"run:{index}" for index in range(len(RUN_BUCKETS_S) + 1)]
_WAIT_FIELDS = [f"wait:{index}" for index in range(len(WAIT_BUCKETS_S) + 1)]
_RETRY = Outcome.RETRY.value


class Settling(NamedTuple):
    """An expired attempt as the reaper decided it: the fenced ``finish`` it records, and the
    TaskResult it announces (None for a task that cannot be loaded). Kept whole for a finish
    call that raised, so the call settled again records, logs and announces that decision: a
    retry policy asked again may answer otherwise (docs/lifecycle.md, When a worker dies:
    leases and the reaper)."""

    attempt: ExpiredAttempt
    finish: Finish
    result: TaskResult | None


def waited_ms(
    payload: str,
    enqueued_ms: int | None,
    started_ms: int | None,
    redis_now_ms: int,
    *,
    failed_before: bool,
) -> int | None:
    """Return how long a first attempt had waited at ``redis_now_ms`` since it became due
    (enqueue, or a later run_after); None for a later attempt, whose wait would count its
    retry delay, and for a task that failed before it ever started (``failed_before``: it
    was cancelled, then requeued), whose wait would count the time it lay cancelled. Every
    instant here is on the Redis clock."""
    if started_ms is not None or enqueued_ms is None or failed_before:
        return None
    return max(0, redis_now_ms - max(enqueued_ms, run_after_ms(payload) or 0))


@dataclass(slots=True)
class PartTally:
    """What one queue part's finished attempts add to its counters since the last send."""

    outcomes: Counter[str] = field(default_factory=Counter)  # P:stats: lifetime per outcome
    recent: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    lifetime: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    # P:done: per finish call, when it recorded its outcomes (monotonic) and their ids. One
    # group per call, not a tuple per task: a busy worker tallies ten thousand ids a second.
    finished: list[tuple[float, list[str]]] = field(default_factory=list)
    number: int = 0  # of the send that carries it, for metrics.lua's fence (0: none yet)
    maybe_counted: bool = False  # a send of it raised MaybeApplied: sent again as it is

    def add(self, finish: Finish, *, reaping: bool, recorded_at: float) -> None:
        """Count one outcome recorded at ``recorded_at`` (``monotonic()``); by the reaper:
        an expired lease, with no run time. A step its workflow stopped before it started
        (``finish.cancelled``) is only indexed as finished: a cancel counts no outcome
        (docs/observability.md, Families)."""
        lease, outcome = finish.lease, finish.outcome.value  # an enum's value is a lookup
        if outcome != _RETRY:
            finished = self.finished
            if not finished or finished[-1][0] != recorded_at:
                finished.append((recorded_at, []))
            finished[-1][1].append(lease.task_id)
        if finish.cancelled:
            return
        path = lease.task_path or UNNAMED_TASK
        counts, totals = self.recent[path], self.lifetime[path]
        self.outcomes[outcome] += 1
        counts[outcome] += 1
        if reaping:
            totals["expired"] += 1
            return  # the reaper knows neither when the attempt started nor how long it ran
        run_ms = finish.run_ms
        if run_ms is None:  # not measured (a Finish built outside a worker): its wall clocks
            run_ms = max(0, finish.finished_ms - finish.started_ms)
        counts[_RUN_FIELDS[bisect_left(_RUN_BUCKETS_MS, run_ms)]] += 1
        totals["run_ms"] += run_ms
        if lease.waited_ms is not None:
            wait_ms = lease.waited_ms + max(0, finish.started_ms - lease.reserved_ms)
            totals[_WAIT_FIELDS[bisect_left(_WAIT_BUCKETS_MS, wait_ms)]] += 1
            totals["wait_ms"] += wait_ms

    def id_count(self) -> int:
        """Return how many ids of the done index this holds."""
        return sum(len(ids) for _, ids in self.finished)

    def drop_oldest_ids(self, kept: int) -> int:
        """Keep the newest ``kept`` ids of the done index and drop the others; return how
        many were dropped."""
        excess = self.id_count() - kept
        if excess <= 0:
            return 0
        cut, left = 0, excess  # whole groups first, oldest first, then part of the next
        while cut < len(self.finished) and len(self.finished[cut][1]) <= left:
            left -= len(self.finished[cut][1])
            cut += 1
        self.finished = self.finished[cut:]
        if left:
            del self.finished[0][1][:left]
        return excess

    def index_entries(self) -> list[str | int]:
        """Return metrics.lua's done index arguments: the number of groups, then per group
        its age in ms (the script dates it back from its own Redis time), its size and ids."""
        now = monotonic()
        args: list[str | int] = [len(self.finished)]
        for recorded_at, ids in self.finished:
            args += [max(0, int((now - recorded_at) * 1000)), len(ids), *ids]
        return args

    def increments(self) -> list[str | int]:
        """Return metrics.lua's per-path arguments: ``path, m, n``, then ``m`` pairs of field
        and amount for the lifetime and the minute hashes (what the admin's last hour shows)
        and ``n`` for the lifetime hash only."""
        args: list[str | int] = []
        for path, counts in self.recent.items():
            totals = self.lifetime.get(path, Counter())
            args += [path, len(counts), len(totals)]
            for name, amount in [*counts.items(), *totals.items()]:
                args += [name, amount]
        return args


class Tally:
    """The counters finished attempts add, per queue part, until they are sent. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._start_afresh()
        renew_after_fork(self)

    def _start_afresh(self) -> None:
        """Start with nothing counted or waiting, as a new sender."""
        self._parts: defaultdict[str, PartTally] = defaultdict(PartTally)
        # Leases whose finish call raised: it may have recorded them, and counted nothing.
        self._unanswered: set[Lease] = set()
        # The reaper's expired attempts whose finish call raised, as decided, per queue and by
        # that call's mark: its next pass settles them again under the same mark, and counts
        # those the first call recorded (``answered``).
        self._unsettled: defaultdict[str, dict[str, list[Settling]]] = defaultdict(dict)
        # Per part, a send whose reply was lost: the next send carries it again, alone.
        self._unsure: dict[str, PartTally] = {}
        # Parts the last send kept back, their Redis Cluster node spared (``keep_for_later``).
        self._spared: set[str] = set()
        # Who numbers the sends (metrics.lua's fence): each tally by itself, as a Django
        # backend (and its broker) may be one per thread.
        self.sender = secrets.token_hex(8)
        self._numbers = itertools.count(1)
        # (queue, path) pairs marked seen in every shard of their queue since _shared_from.
        self._shared: set[tuple[str, str]] = set()
        self._shared_from = -math.inf

    def after_fork(self) -> None:
        """Start a forked child's tally empty: what the parent counted is the parent's to send
        (a supervisor whose reap pass could not send its counts handed them to the next worker
        process it forked, and both sent them), with locks no parent thread holds, and as a
        sender of its own: its sends, numbered as its parent's, would be skipped as counted."""
        self._lock, self._sending = threading.Lock(), threading.Lock()
        self._start_afresh()

    def forget(self) -> None:
        """Drop everything counted and not sent (its keys were deleted)."""
        with self._lock:
            self._start_afresh()

    def sending(self) -> threading.Lock:
        """Return the lock a send holds from ``take`` to its answer: the sends of one sender
        must reach Redis in the order they are numbered, or metrics.lua would skip the lower."""
        return self._sending

    def add(self, recorded: Iterable[tuple[str, Finish]], *, reaping: bool) -> None:
        """Count outcomes recorded just now, each with the queue part its task lives in."""
        recorded_at = monotonic()
        with self._lock:
            for part, finish in recorded:
                self._parts[part].add(finish, reaping=reaping, recorded_at=recorded_at)

    def unanswered(self, finishes: Iterable[Finish]) -> None:
        """Note outcomes whose finish call raised: it may have recorded them (a reply lost, a
        write not confirmed), and counted none of them."""
        with self._lock:
            self._unanswered.update(finish.lease for finish in finishes)

    def answered(self, finishes: Sequence[Finish], already: Iterable[Finish]) -> list[Finish]:
        """Forget ``finishes`` as unanswered; return those of ``already`` (answered "already
        recorded") that were unanswered: a try that raised recorded them uncounted, so they
        count now, once. A duplicate of an outcome whose call answered counts nothing."""
        if not self._unanswered:  # the usual case: no lock taken
            return []
        landed = []
        with self._lock:
            for finish in already:  # each lease once, even if the call held it twice
                if finish.lease in self._unanswered:
                    self._unanswered.discard(finish.lease)
                    landed.append(finish)
            self._unanswered.difference_update(finish.lease for finish in finishes)
        return landed

    def settle_later(self, queue: str, mark: str, attempts: Sequence[Settling]) -> None:
        """Keep the reaper's ``attempts`` of ``queue`` whose finish call, marked ``mark``,
        raised: it may have recorded them, and their leases are then gone from the next reap."""
        with self._lock:
            self._unsettled[queue][mark] = list(attempts)

    def to_settle_again(self, queue: str) -> list[tuple[str, list[Settling]]]:
        """Return the calls of ``queue`` kept by ``settle_later``: each mark, its attempts."""
        with self._lock:
            return list(self._unsettled[queue].items())

    def settled(self, queue: str, mark: str) -> None:
        """Forget the attempts kept under ``mark``: a call with that mark was answered."""
        with self._lock:
            self._unsettled[queue].pop(mark, None)

    def take(self) -> dict[str, PartTally]:
        """Return what to send now per queue part, each numbered, and start again from nothing.

        A part whose last send may have been counted (its reply was lost) gets that send
        again, under its number; what the part counted since waits for the next send: counted
        first under a higher number, it would have the lost one skipped.
        """
        with self._lock:
            number = next(self._numbers)
            taken, self._unsure, self._spared = self._unsure, {}, set()
            waiting: defaultdict[str, PartTally] = defaultdict(PartTally)
            for part, tally in self._parts.items():
                if part in taken:
                    waiting[part] = tally
                else:
                    tally.number = number
                    taken[part] = tally
            self._parts = waiting
            dropped = {
                part: count
                for part, tally in waiting.items()
                if (count := tally.drop_oldest_ids(_room_beside(taken[part])))
            }
        _warn_dropped(dropped)
        return taken

    def unshared(self, counted: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Return the (queue, path) pairs of ``counted`` not marked seen in every shard of
        their queue within SHARE_PATHS_EVERY_S, and take them as marked now."""
        now = monotonic()
        with self._lock:
            if now - self._shared_from >= SHARE_PATHS_EVERY_S:
                self._shared, self._shared_from = set(), now
            fresh = [pair for pair in counted if pair not in self._shared]
            self._shared.update(fresh)
        return fresh

    def put_back(self, parts: dict[str, PartTally], *, maybe_counted: bool = False) -> None:
        """Keep what a send did not deliver for the next send.

        A send that may have been counted (``maybe_counted``: its reply was lost), or that is
        such a send again, is kept apart as it is and sent again under its number (metrics.lua
        skips it if it was counted). Any other counted nothing and is counted again with what
        came since; of the done index's ids, only the newest MAX_UNSENT_DONE_IDS per part are
        kept.
        """
        dropped: dict[str, int] = {}
        with self._lock:
            for part, tally in parts.items():
                if not tally.outcomes and not tally.finished:  # only a trim: nothing to keep
                    continue
                if maybe_counted or tally.maybe_counted:
                    tally.maybe_counted = True
                    self._unsure[part] = tally
                    continue
                mine = self._parts[part]
                mine.outcomes.update(tally.outcomes)
                mine.finished[:0] = tally.finished  # older than what came since the take
                if count := mine.drop_oldest_ids(MAX_UNSENT_DONE_IDS):
                    dropped[part] = count
                for path, counts in tally.recent.items():
                    mine.recent[path].update(counts)
                for path, totals in tally.lifetime.items():
                    mine.lifetime[path].update(totals)
        _warn_dropped(dropped)

    def keep_for_later(self, parts: dict[str, PartTally]) -> None:
        """Keep ``parts``, on a Redis Cluster node the client spares, for a send once it
        answers: ``put_back``, noted until the next ``take`` (``only_spared``)."""
        self.put_back(parts)
        with self._lock:
            self._spared.update(parts)

    def only_spared(self) -> bool:
        """Tell whether all that waits to be sent was kept back by the last send, its node
        spared: sending again at once reaches no Redis."""
        with self._lock:
            return self._spared.issuperset([*self._parts, *self._unsure])

    def unsure(self) -> bool:
        """Tell whether a send whose reply was lost waits to be sent again."""
        return bool(self._unsure)

    def __bool__(self) -> bool:
        return bool(self._parts or self._unsure)


def _room_beside(unsure: PartTally) -> int:
    """Return how many done index ids a part may hold beside a send whose reply was lost."""
    return max(0, MAX_UNSENT_DONE_IDS - unsure.id_count())


def _warn_dropped(dropped: dict[str, int]) -> None:
    for part, count in dropped.items():
        logger.warning(
            "Metrics sends keep failing: finished tasks left out of the admin's finished "
            "list part=%s count=%d (the oldest unsent; %d are kept). Their results are "
            "stored and read by id and expire with result_ttl (docs/observability.md, "
            "Metrics and the done index)",
            part,
            count,
            MAX_UNSENT_DONE_IDS,
        )
