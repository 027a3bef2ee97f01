"""The Inspector: read-only queries on the queues of one backend alias, for the admin.

See the package docstring for the rules every query here follows.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

from ...codec.ids import queue_of
from ...codec.payloads import PATH_HEAD_BYTES, task_path_in_head
from ...codec.progress import PROGRESS_FIELDS, stored_progress
from ..broker import Broker
from ..connection import readable_replies
from ..keys import QueueKeys, part_shards
from ..pausing import QueuePause
from ..raw_replies import RAW, NotUtf8Id, escaped, stored_counters, stored_id, stored_scored_ids
from ..reads import damaged_record
from ..types import stored_int
from .located import located
from .ready_walk import READY_SINCE_FIELDS, band_heads, oldest_ready_since
from .record import RecordValues, not_utf8, read_values
from .steps import StepRecord, step_records
from .types import (
    Fields,
    Index,
    QueueOverview,
    StateSplit,
    TaskDetail,
    TaskRow,
    WorkerSighting,
)

STATE_SAMPLE = 1000  # ids whose state is read to split finished/leased counts; above: estimate
MAX_SIGHTINGS = 1000  # latest worker sightings read per queue part (admin, health, metrics)
THROUGHPUT_MINUTES = (1, 5, 15)  # windows of the throughput figures on the queues page
ROW_FIELDS = (
    "state",
    "payload",
    "enqueued_ms",
    "run_after_ms",
    "started_ms",
    "finished_ms",
    "workers",
    "nerrors",
    *PROGRESS_FIELDS,
)
# Ids and records come back as bytes, decoded one by one (raw_replies.py): one that is not
# UTF-8, decoded by the client, failed the whole reply, and with it the page.
SCORED = {"withscores": True, **RAW}  # a sorted set's ids with their scores, as bytes


def _stored_ints(values: list[bytes | None]) -> list[int | None]:
    """Read numbers read as bytes (``stored_int``): one that is not UTF-8 reads as unknown."""
    return [None if value is None else stored_int(escaped(value)) for value in values]


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


class Inspector:
    """Read-only queries on the queues of one backend alias, for the admin."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.client = broker.client
        self._record_prefixes: dict[str, str] = {}

    def _keys(self, part: str) -> QueueKeys:
        """Return the keys of a queue, or of one shard of a sharded queue (its part name)."""
        return self.broker.queue_keys(part)

    def parts(self, queue: str) -> list[str]:
        """Return the parts whose keys hold ``queue``: itself, or one per shard.

        Queries taking queue names sum a sharded queue's parts; the listing walks each part
        as its own index (a part name passed as a queue is its own only part).
        """
        return self.broker.parts(queue)

    def parts_to_sum(
        self, queues: Sequence[str], *, every_count: bool = False
    ) -> dict[str, list[str]]:
        """Return, per queue, the parts a query sums: those of its configured shard count,
        then, with ``every_count``, those of every other count it kept keys under.

        The admin's pages and the metrics sum every count, so the tasks, workers and counts of
        an earlier ``queue_shards`` stay in view until they are gone (docs/scaling.md,
        Changing the shard count).
        """
        other = self.broker.other_parts_in(queues, self.layouts) if every_count else {}
        return {queue: [*self.parts(queue), *other.get(queue, ())] for queue in queues}

    @cached_property
    def layouts(self) -> Iterable[bytes]:
        """The shard counts recorded, read once: an Inspector serves one page view or scrape
        (Source)."""
        return self.broker.recorded_layouts()

    def _record(self, task_id: str, found_in: Mapping[str, str] | None = None) -> str:
        """Return the record key of ``task_id``, in its part in ``found_in`` if given there
        (one of another shard count), building each part's prefix once."""
        part = (found_in or {}).get(task_id) or self.broker.part_of(task_id) or ""
        if part not in self._record_prefixes:
            self._record_prefixes[part] = self._keys(part).record_prefix
        return self._record_prefixes[part] + task_id

    def now_ms(self) -> int:
        """Return Redis server time in ms: the clock every score was written with."""
        return self.broker.server_time_ms()

    # Queues page ---------------------------------------------------------------------------

    def overview(self, queues: Sequence[str], *, every_count: bool = False) -> list[QueueOverview]:
        """Return the counts of ``queues``: a fixed number of round trips per queue; with
        ``every_count``, summed over every shard count (``parts_to_sum``)."""
        now = self.now_ms()
        parts = self.parts_to_sum(queues, every_count=every_count)
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in (part for queue in queues for part in parts[queue]):
                keys = self._keys(part)
                pipe.zcard(keys.ready)
                pipe.zcard(keys.delayed)
                pipe.zcard(keys.done)
                pipe.execute_command("HGETALL", keys.stats, **RAW)
                for minutes in THROUGHPUT_MINUTES:
                    pipe.zcount(keys.done, now - minutes * 60_000, "+inf")
            replies = iter(pipe.execute())
        counted = []
        for queue in queues:
            ready = delayed = finished = 0
            stats: dict[str, int] = defaultdict(int)
            since = dict.fromkeys(THROUGHPUT_MINUTES, 0)
            for _ in parts[queue]:
                ready += int(next(replies))
                delayed += int(next(replies))
                finished += int(next(replies))
                for name, value in stored_counters(next(replies)).items():
                    stats[name] += value
                for minutes in THROUGHPUT_MINUTES:
                    since[minutes] += int(next(replies))
            counted.append((queue, ready, delayed, finished, stats, since))
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
                finished=finished,
                outcomes=outcomes[queue],
                finished_since=since,
                oldest_ready_since_ms=oldest.get(queue),
                lifetime=dict(stats),
                shards=len(self.parts(queue)),
            )
            for queue, ready, delayed, finished, stats, since in counted
        ]

    def waiting(
        self, queues: Sequence[str], *, every_count: bool = False
    ) -> dict[str, tuple[int, int]]:
        """Return (ready, delayed) of each queue, summed over shards (``parts_to_sum``): one
        pipeline of ZCARDs."""
        parts = self.parts_to_sum(queues, every_count=every_count)
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in (part for queue in queues for part in parts[queue]):
                keys = self._keys(part)
                pipe.zcard(keys.ready)
                pipe.zcard(keys.delayed)
            replies = iter(pipe.execute())
        waiting = {}
        for queue in queues:
            counts = [(int(next(replies)), int(next(replies))) for _ in parts[queue]]
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
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in (part for queue in queues for part in parts[queue]):
                pipe.execute_command("GET", self._keys(part).paused, **RAW)
            replies = iter(readable_replies(pipe.execute(raise_on_error=False)))
        found = {}
        for queue in queues:
            notes = [note for _ in parts[queue] if (note := next(replies)) is not None]
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
            replies = iter(_stored_ints(pipe.execute()))
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
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in every_part:
                key = getattr(self._keys(part), index.value)
                pipe.zcard(key)
                pipe.execute_command("ZREVRANGE", key, 0, STATE_SAMPLE - 1, **RAW)
            replies = iter(pipe.execute())
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

    def workers(
        self,
        queues: Sequence[str],
        *,
        counts: bool = True,
        live_from_ms: int | None = None,
        every_count: bool = False,
    ) -> list[WorkerSighting]:
        """Return the workers that renewed leases in ``queues``, most recent first: at most
        MAX_SIGHTINGS per queue part, so the reads stay bounded however many processes came
        and went (each start adds a sighting, kept a day). With ``live_from_ms``, every
        sighting renewed since then too, however many: a count of the live processes of one
        host (threadmill_health) must not miss those ranked past MAX_SIGHTINGS by a larger
        fleet (docs/deploy.md, Health).

        A worker of a sharded queue renews in every shard: it is one sighting per queue, its
        held tasks summed, its latest renewal and its thread count (the same in every shard) kept.
        Without ``counts`` the held tasks and threads are not read (0 each): one round trip,
        all a health probe, which must answer within its timeout, asks. With ``every_count``,
        the workers of every shard count too (``parts_to_sum``).
        """
        parts = self.parts_to_sum(queues, every_count=every_count)
        every_part = [part for queue in queues for part in parts[queue]]
        latest, _ = self._sighted(every_part, live_from_ms)
        return self._sightings(parts, latest, counts)

    def host_sightings(
        self, queues: Sequence[str], host: str, live_from_ms: int
    ) -> tuple[list[WorkerSighting], int | None]:
        """Return ``workers(queues, counts=False, live_from_ms=live_from_ms)`` and when a
        process of ``host`` last signed off in ``queues`` (ms, Redis clock; None: not within
        a day), read in the same round trip: a stopped process leaves no sighting, and
        threadmill_health still says when its host was last seen."""
        parts = {queue: self.parts(queue) for queue in queues}
        every_part = [part for queue in queues for part in parts[queue]]
        latest, signed_off = self._sighted(every_part, live_from_ms, signed_off_by=host)
        return self._sightings(parts, latest, counts=False), max(signed_off, default=None)

    def _sightings(
        self,
        parts: dict[str, list[str]],
        latest: dict[str, list[tuple[str, float]]],
        counts: bool,
    ) -> list[WorkerSighting]:
        """Return one sighting per worker and queue of ``parts`` from ``latest``, the sightings
        of each part, most recent first; with ``counts``, what each holds and its threads."""
        replies = iter(self._held_and_threads(latest) if counts else [])
        sightings = []
        for queue in parts:
            held_by: dict[str, int] = defaultdict(int)
            threads_of: dict[str, int] = defaultdict(int)
            renewed_at: dict[str, int] = {}
            for part in parts[queue]:
                unread = [None] * len(latest[part])
                held, threads = (next(replies), next(replies)) if counts else (unread, unread)
                for (worker_id, score), held_n, threads_n in zip(
                    latest[part], held, threads, strict=False
                ):
                    held_by[worker_id] += held_n or 0
                    threads_of[worker_id] = max(threads_n or 0, threads_of[worker_id])
                    renewed_at[worker_id] = max(int(score), renewed_at.get(worker_id, 0))
            sightings += [
                WorkerSighting(
                    worker_id=worker_id,
                    queue=queue,
                    held=held_by[worker_id],
                    threads=threads_of[worker_id],
                    last_renewal_ms=last_ms,
                )
                for worker_id, last_ms in renewed_at.items()
            ]
        return sorted(sightings, key=lambda s: s.last_renewal_ms, reverse=True)

    def _sighted(
        self, parts: Sequence[str], live_from_ms: int | None, signed_off_by: str | None = None
    ) -> tuple[dict[str, list[tuple[str, float]]], list[int]]:
        """Read the sightings of ``parts`` in one round trip: the newest MAX_SIGHTINGS, or with
        ``live_from_ms`` every one since then and the newest MAX_SIGHTINGS before it; with
        ``signed_off_by``, when a process of that host last signed off in each part that
        kept it too."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            if signed_off_by is not None:
                for part in parts:
                    pipe.zscore(self._keys(part).stopped, signed_off_by)
            for part in parts:
                key = self._keys(part).workers
                if live_from_ms is None:
                    pipe.execute_command(
                        "ZREVRANGE", key, 0, MAX_SIGHTINGS - 1, "WITHSCORES", **SCORED
                    )
                    continue
                pipe.execute_command(
                    "ZREVRANGEBYSCORE", key, "+inf", live_from_ms, "WITHSCORES", **SCORED
                )
                silent = (f"({live_from_ms}", "-inf", "WITHSCORES", "LIMIT", 0, MAX_SIGHTINGS)
                pipe.execute_command("ZREVRANGEBYSCORE", key, *silent, **SCORED)
            replies = iter(pipe.execute())
        asked = [next(replies) for _ in parts] if signed_off_by is not None else []
        signed_off = [int(ms) for ms in asked if ms is not None and math.isfinite(ms)]
        per_part = 1 if live_from_ms is None else 2
        sightings = {
            part: [
                (escaped(worker_id), score)
                for _ in range(per_part)
                for worker_id, score in next(replies)
                if math.isfinite(score)  # a score written by hand (inf) is no renewal time
            ]
            for part in parts
        }
        return sightings, signed_off

    def _held_and_threads(self, latest: dict[str, list[tuple[str, float]]]) -> list[Any]:
        """Read, per part, what its sighted workers hold and their thread counts: two HMGETs
        each, in one round trip."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part, sighted in latest.items():
                ids = [worker_id for worker_id, _ in sighted] or [""]  # HMGET needs one
                pipe.execute_command("HMGET", self._keys(part).held, *ids, **RAW)
                pipe.execute_command("HMGET", self._keys(part).threads, *ids, **RAW)
            return [_stored_ints(counts) for counts in pipe.execute()]

    # Listing -------------------------------------------------------------------------------

    def index_size(self, index: Index, parts: Sequence[str], as_of_ms: int | None) -> int:
        """Return how many ids ``index`` holds over ``parts`` (done: finished by ``as_of_ms``)."""
        return sum(self.sizes(index, parts, as_of_ms).values())

    def sizes(self, index: Index, parts: Sequence[str], as_of_ms: int | None) -> dict[str, int]:
        """Return, per part, how many ids its ``index`` holds (done: finished by ``as_of_ms``).

        A listing walking back from a cursor caps the cursor's ranks at these.
        """
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for part in parts:
                key = getattr(self._keys(part), index.value)
                if as_of_ms is None:
                    pipe.zcard(key)
                else:
                    pipe.zcount(key, "-inf", as_of_ms)
            return {p: int(n) for p, n in zip(parts, pipe.execute(), strict=True)}

    def ranks_after(self, index: Index, queues: Sequence[str], as_of_ms: int) -> dict[str, int]:
        """Return, per queue, how many ids of a newest-first index are newer than ``as_of_ms``.

        A listing counts its positions from there, so results finishing while someone pages
        do not shift the pages.
        """
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for queue in queues:
                pipe.zcount(getattr(self._keys(queue), index.value), f"({as_of_ms}", "+inf")
            return {q: int(n) for q, n in zip(queues, pipe.execute(), strict=True)}

    def windows(
        self, index: Index, ranges: dict[str, tuple[int, int]]
    ) -> dict[str, list[tuple[str, float]]]:
        """Return ids and scores at ranks ``start..stop`` (inclusive) of each queue's index."""
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for queue, (start, stop) in ranges.items():
                key = getattr(self._keys(queue), index.value)
                command = "ZREVRANGE" if index.newest_first else "ZRANGE"
                pipe.execute_command(command, key, start, stop, "WITHSCORES", **SCORED)
            return {
                q: stored_scored_ids(found) for q, found in zip(ranges, pipe.execute(), strict=True)
            }

    def _hmget(self, keys: Sequence[str], fields: Sequence[str]) -> list[Fields]:
        """Return ``fields`` of each record key, None where the key is not a hash: one pipeline."""
        if not keys:
            return []
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            for key in keys:
                pipe.execute_command("HMGET", key, *fields, **RAW)
            replies = readable_replies(pipe.execute(raise_on_error=False))
        return [
            None
            if isinstance(reply, Exception)
            else [None if v is None else escaped(v) for v in reply]
            for reply in replies
        ]

    def _listed_fields(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None
    ) -> list[Fields]:
        """Return ``fields`` of the record of each of ``ids``: None where its key is not a hash,
        and for an id that is not UTF-8 (``NotUtf8Id``), which names no record and is not read.

        A ``payload`` among them is its first PATH_HEAD_BYTES only (``task_path_in_head``).
        """
        readable = [task_id for task_id in ids if not isinstance(task_id, NotUtf8Id)]
        found = iter(self._fields_of(readable, fields, found_in))
        return [None if isinstance(task_id, NotUtf8Id) else next(found) for task_id in ids]

    def _fields_of(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None
    ) -> list[Fields]:
        """Return ``fields`` of each record of ``ids``, a payload cut to its head: a page of 50
        rows of 2 MB payloads read 100 MB for their task paths (docs/admin.md, Cost per page
        view)."""
        if "payload" not in fields:
            return self._hmget([self._record(task_id, found_in) for task_id in ids], fields)
        replies = self.broker.cut_fields(ids, fields, "payload", PATH_HEAD_BYTES, found_in)
        return [
            None if reply is None else [None if v is None else escaped(v) for v in reply]
            for reply in replies
        ]

    def probe(
        self, ids: Sequence[str], fields: Sequence[str], found_in: Mapping[str, str] | None = None
    ) -> list[dict[str, str | None] | None]:
        """Return ``fields`` of each record of ``ids`` (all None where it is gone, None where
        its key is not a hash or its id is not UTF-8), each in its part in ``found_in`` if
        given there: one pipeline.

        A filtered listing reads only what its filter needs, then whole rows for the matches.
        """
        replies = self._listed_fields(ids, fields, found_in)
        return [
            None if values is None else dict(zip(fields, values, strict=True)) for values in replies
        ]

    def rows(
        self, ids: Iterable[str], found_in: Mapping[str, str] | None = None
    ) -> dict[str, TaskRow | None]:
        """Return the listing fields of each id (None where the record is gone, a ``DAMAGED``
        row where its key is not a hash or its id is not UTF-8), each read in its part in
        ``found_in`` if given there (one of another shard count): one pipeline."""
        wanted = list(ids)
        replies = self._listed_fields(wanted, ROW_FIELDS, found_in)
        return {
            task_id: self._row(task_id, values, self._stored_elsewhere(task_id, found_in))
            for task_id, values in zip(wanted, replies, strict=True)
        }

    def _stored_elsewhere(self, task_id: str, found_in: Mapping[str, str] | None) -> bool:
        """Whether ``found_in`` puts ``task_id`` where its configured shard count does not."""
        part = (found_in or {}).get(task_id)
        return part is not None and part != self.broker.part_of(task_id)

    @staticmethod
    def _row(task_id: str, values: Fields, stored_elsewhere: bool) -> TaskRow | None:
        if values is None:
            return TaskRow.unreadable(task_id, queue_of(task_id) or "")
        fields = dict(zip(ROW_FIELDS, values, strict=True))
        if not fields["state"]:
            return None
        return TaskRow(
            id=task_id,
            queue=queue_of(task_id) or "",
            stored_elsewhere=stored_elsewhere,
            state=fields["state"] or "",
            path=task_path_in_head(fields["payload"]),
            enqueued_ms=stored_int(fields["enqueued_ms"]),
            run_after_ms=stored_int(fields["run_after_ms"]),
            started_ms=stored_int(fields["started_ms"]),
            finished_ms=stored_int(fields["finished_ms"]),
            attempts=len(fields["workers"].split("\n")) if fields["workers"] else 0,
            errors=stored_int(fields["nerrors"]) or 0,
            progress=stored_progress(fields),
        )

    def step_records(self, ids: Sequence[str], most_bytes: int) -> list[StepRecord | None]:
        """Return what a workflow's page shows of its steps' records (``steps.step_records``):
        the state, and the payload and result of at most ``most_bytes`` each."""
        return step_records(self.broker, ids, most_bytes)

    # One task ------------------------------------------------------------------------------

    def detail(self, task_id: str, *, whole: Collection[str] = ()) -> TaskDetail | None:
        """Return the record of ``task_id`` with its TTL and index positions, or None.

        Its values are read up to DETAIL_READ_BYTES in all (``read_values``); the fields in
        ``whole`` are read up to SHOW_ALL_BYTES each, for a page that serves one value whole.
        A record not in its configured shard count's part is looked for in those of the other
        counts its queue was used with (``located``), so its page opens after a change of
        ``queue_shards`` (docs/scaling.md, Changing the shard count).
        """
        part = self.broker.part_of(task_id)
        found = None if part is None else self._detail(task_id, part, whole)
        if found is None and part is not None:
            elsewhere = self.located([task_id]).get(task_id, part)
            found = None if elsewhere == part else self._detail(task_id, elsewhere, whole)
        return found

    def _detail(self, task_id: str, part: str, whole: Collection[str]) -> TaskDetail | None:
        """Return ``detail`` of ``task_id`` read in ``part``, or None if it holds no record."""
        queue = queue_of(task_id) or ""
        keys = self._keys(part)
        key = keys.record(task_id)
        with self.broker.translated_errors(read=True), self.client.pipeline(False) as pipe:
            pipe.hlen(key)
            pipe.pttl(key)
            pipe.zscore(keys.leases, task_id)
            pipe.zscore(keys.delayed, task_id)
            pipe.zrank(keys.ready, task_id)
            pipe.type(key)
            replies = readable_replies(pipe.execute(raise_on_error=False))
        count, ttl_ms, deadline, due, position, kind = replies
        if not count:
            return None
        damaged = isinstance(count, Exception)
        read = RecordValues({}, {}, "") if damaged else read_values(self.broker, key, count, whole)
        if not (damaged or read.values or read.unread):
            return None  # it expired between the reads
        return TaskDetail(
            id=task_id,
            queue=queue,
            key=key,
            record={escaped(name): escaped(value) for name, value in read.values.items()},
            unread={escaped(name): size for name, size in read.unread.items()},
            ttl_ms=int(ttl_ms) if int(ttl_ms) >= 0 else None,
            lease_deadline_ms=stored_int(deadline),
            due_ms=stored_int(due),
            ready_position=position,
            damaged=str(damaged_record(task_id, key, kind)) if damaged else "",
            not_utf8=not_utf8(task_id, key, {**dict.fromkeys(read.unread, b""), **read.values}),
            fields_left_out=read.fields_left_out,
            shards=part_shards(part),
        )

    def located(self, task_ids: Sequence[str]) -> dict[str, str]:
        """Return those of ``task_ids`` that have a record, each with the part holding it,
        under any shard count its queue was used with (``located.located``)."""
        return located(self.broker, task_ids, self.layouts)
