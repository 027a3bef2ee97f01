"""The Inspector's queue reads, for the queues page: counts, waiting, pauses, rate limits,
state splits and the oldest ready time.

See the package docstring for the rules every query here follows.
"""

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ..keys import QueueKeys
from ..pausing import QueuePause
from ..raw_replies import RAW, escaped, stored_counters, stored_id
from .base import InspectorBase, stored_ints
from .ready_walk import READY_SINCE_FIELDS, band_heads, oldest_ready_since
from .types import Fields, Index, QueueOverview, StateSplit

STATE_SAMPLE = 1000  # ids whose state is read to split finished/leased counts; above: estimate
THROUGHPUT_MINUTES = (1, 5, 15)  # windows of the throughput figures on the queues page


def _split(total: int, states: list[Fields]) -> StateSplit:
    """Count the ``states`` read of the newest ids of an index holding ``total``; scale them
    to ``total`` when it holds more than were read."""
    counts = Counter(fields[0] for fields in states if fields and fields[0])
    seen = sum(counts.values())
    if total <= len(states) or not seen:
        return StateSplit(counts=dict(counts), exact=total <= len(states))
    return StateSplit(
        counts={state: round(n * total / seen) for state, n in counts.items()}, exact=False
    )


def _summed(splits: list[StateSplit]) -> StateSplit:
    """Sum the splits of a queue's parts (one, unless it is sharded)."""
    counts: Counter[str] = Counter()
    for split in splits:
        counts.update(split.counts)
    return StateSplit(counts=dict(counts), exact=all(split.exact for split in splits))


def _pause(note: bytes | Exception) -> QueuePause:
    """Read a ``P:paused`` value read as bytes, each byte that is not UTF-8 as its escape
    (``\\xff``); a key of another type is a pause that says what it holds."""
    if isinstance(note, Exception):
        return QueuePause(at_ms=None, by="", reason=f"its key holds no string ({note})")
    return QueuePause.parse(escaped(note))


def _waiting(pipe: Any, keys: QueueKeys) -> None:
    pipe.zcard(keys.ready)
    pipe.zcard(keys.delayed)


class QueueReads(InspectorBase):
    """The counts, pauses and times of whole queues (the queues page, health and metrics)."""

    def overview(self, queues: Sequence[str], *, every_count: bool = False) -> list[QueueOverview]:
        """Return the counts of ``queues``: a fixed number of round trips per queue; with
        ``every_count``, summed over every shard count (``parts_to_sum``)."""
        now = self.now_ms()
        parts = self.parts_to_sum(queues, every_count=every_count)

        def read(pipe: Any, keys: QueueKeys) -> None:
            pipe.zcard(keys.ready)
            pipe.zcard(keys.delayed)
            pipe.zcard(keys.done)
            pipe.zcard(keys.leases)
            pipe.zcount(keys.leases, "-inf", now)  # lapsed: what the reaper settles (reap.lua)
            pipe.execute_command("HGETALL", keys.stats, **RAW)
            for minutes in THROUGHPUT_MINUTES:
                pipe.zcount(keys.done, now - minutes * 60_000, "+inf")

        replies = self.read_parts(parts, read)
        counted = []
        for queue, queue_parts in parts.items():
            ready = delayed = finished = held = lapsed = 0
            stats: dict[str, int] = defaultdict(int)
            since = dict.fromkeys(THROUGHPUT_MINUTES, 0)
            for _ in queue_parts:
                ready += int(next(replies))
                delayed += int(next(replies))
                finished += int(next(replies))
                held += int(next(replies))
                lapsed += int(next(replies))
                for name, value in stored_counters(next(replies)).items():
                    stats[name] += value
                for minutes in THROUGHPUT_MINUTES:
                    since[minutes] += int(next(replies))
            counted.append((queue, ready, delayed, finished, held, lapsed, stats, since))
        leased = self._state_splits(parts, Index.LEASES)
        outcomes = self._state_splits(parts, Index.DONE)
        oldest = self._oldest_ready_times(
            {queue: parts[queue] for queue, ready, *_ in counted if ready}
        )
        return [
            QueueOverview(
                queue=queue,
                now_ms=now,
                ready=ready,
                delayed=delayed,
                leased=leased[queue],
                held=held,
                lapsed=lapsed,
                finished=finished,
                outcomes=outcomes[queue],
                finished_since=since,
                oldest_ready_since_ms=oldest.get(queue),
                lifetime=dict(stats),
                shards=len(self.parts(queue)),
            )
            for queue, ready, delayed, finished, held, lapsed, stats, since in counted
        ]

    def waiting(
        self, queues: Sequence[str], *, every_count: bool = False
    ) -> dict[str, tuple[int, int]]:
        """Return (ready, delayed) of each queue, summed over shards (``parts_to_sum``): one
        pipeline of ZCARDs."""
        parts = self.parts_to_sum(queues, every_count=every_count)
        replies = self.read_parts(parts, _waiting)
        waiting = {}
        for queue, queue_parts in parts.items():
            counts = [(int(next(replies)), int(next(replies))) for _ in queue_parts]
            waiting[queue] = (sum(r for r, _ in counts), sum(d for _, d in counts))
        return waiting

    def holding(self, queues: Sequence[str]) -> dict[str, int]:
        """Return those of ``queues`` that hold waiting tasks (ready or delayed), with how
        many: ``waiting``'s one pipeline."""
        totals = {queue: sum(counts) for queue, counts in self.waiting(queues).items()}
        return {queue: total for queue, total in totals.items() if total}

    def paused(self, queues: Sequence[str]) -> dict[str, QueuePause]:
        """Return the pause of each paused queue among ``queues``: one pipelined GET per part.

        A sharded queue counts as paused if any shard is (a pause is set in every shard). A key
        of another type, written by hand, pauses too (acquire.lua asks EXISTS) and says so.
        """
        parts = {queue: self.parts(queue) for queue in queues}
        replies = self.read_parts(
            parts, lambda pipe, keys: pipe.execute_command("GET", keys.paused, **RAW), tolerant=True
        )
        found = {}
        for queue, queue_parts in parts.items():
            notes = [note for _ in queue_parts if (note := next(replies)) is not None]
            if notes:
                found[queue] = _pause(notes[0])
        return found

    def next_tokens_ms(self, queues: Sequence[str]) -> dict[str, int | None]:
        """Return when each queue's rate limit allows its next start (Redis ms; None: now): the
        later of its next reservation (acquire) and its next start turn (pace)."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for queue in queues:
                pipe.execute_command("GET", self._keys(queue).rate, **RAW)
                pipe.execute_command("GET", self._keys(queue).paced, **RAW)
            replies = iter(stored_ints(pipe.execute()))
            found = {}
            # Two replies a queue, taken in turn from one iterator.
            for queue, reservation, start in zip(queues, replies, replies, strict=False):
                times = [t for t in (reservation, start) if t is not None]
                found[queue] = max(times) if times else None
            return found

    def state_splits(
        self, queues: Sequence[str], index: Index, *, every_count: bool = False
    ) -> dict[str, StateSplit]:
        """Count the states of the ids in each queue's ``index``, summed over its shards
        (``parts_to_sum``); above STATE_SAMPLE ids in a part, estimate from its newest.

        Two round trips, whatever the number of queues: the sizes and newest ids of every
        part in one pipeline, their states in another.
        """
        return self._state_splits(self.parts_to_sum(queues, every_count=every_count), index)

    def _state_splits(self, parts: dict[str, list[str]], index: Index) -> dict[str, StateSplit]:
        """``state_splits`` of the queues of ``parts``, each summed over its parts there."""
        queues = list(parts)
        every_part = [part for queue in queues for part in parts[queue]]

        def read(pipe: Any, keys: QueueKeys) -> None:
            key = getattr(keys, index.value)
            pipe.zcard(key)
            pipe.execute_command("ZREVRANGE", key, 0, STATE_SAMPLE - 1, **RAW)

        replies = self.read_parts(parts, read)
        newest = {
            part: (int(next(replies)), [stored_id(task_id) for task_id in next(replies)])
            for part in every_part
        }
        records = [
            self._keys(part).record(task_id) for part in every_part for task_id in newest[part][1]
        ]
        states = iter(self._hmget(records, ["state"]))
        splits = {
            part: _split(total, [next(states) for _ in ids])
            for part, (total, ids) in newest.items()
        }
        return {queue: _summed([splits[part] for part in parts[queue]]) for queue in queues}

    def oldest_ready_times(
        self, queues: Sequence[str], *, every_count: bool = False
    ) -> dict[str, int | None]:
        """Return, per queue, when its longest-waiting ready task (of every shard,
        ``parts_to_sum``) became ready.

        That is its ``ready_ms`` (a retry's due time, a requeue), else the later of its enqueue
        and its run_after. A band's ids are in enqueue order, but a retried or requeued task
        keeps its place while its wait starts again, so the first BAND_SAMPLE ids of each
        priority band are read, never a scan of the set. A band holding more counts its
        unread ids from the enqueue time of its last id read: none of them became ready
        before that, so the figure may be older than the truth, never younger. Every queue
        walks its bands in the same round trips (``band_heads``), and their fields are read in
        one more.
        """
        return self._oldest_ready_times(self.parts_to_sum(queues, every_count=every_count))

    def _oldest_ready_times(self, parts: dict[str, list[str]]) -> dict[str, int | None]:
        """``oldest_ready_times`` of the queues of ``parts``, each over its parts there."""
        queues = list(parts)
        every_part = [part for queue in queues for part in parts[queue]]
        keys = [self._keys(part) for part in every_part]
        heads = band_heads(self.broker, keys)
        records = [
            part_keys.record(task_id)
            for part_keys, (sampled, _) in zip(keys, heads, strict=True)
            for task_id in sampled
        ]
        fields = iter(self._hmget(records, READY_SINCE_FIELDS))
        found = {
            part: oldest_ready_since({task_id: next(fields) for task_id in sampled}, truncated)
            for part, (sampled, truncated) in zip(every_part, heads, strict=True)
        }
        return {
            queue: min(
                (ms for part in parts[queue] if (ms := found[part]) is not None), default=None
            )
            for queue in queues
        }
