"""Page through the per-queue indexes of several queues and aliases as one ordered list.

A page starts at a ``Cursor``: per queue, the last entry of its index walked before the page
(a ``Mark``), whose rank is looked up when the page is read: tasks that left the index or
arrived in it before that entry move no other task onto a page it was not on, or off one.
Each step reads one window per queue by rank (O(log N + window) in Redis; each index entry is
read once per walk), merges the windows in score order, keeps the prefix that is certainly in
order, and reads only those records.
Filters are applied to that prefix, so a filtered page reads at most ``budget`` index entries
and says where it stopped; nothing ever scans the whole index. A record whose key is not a hash,
or an id that is not UTF-8, is a DAMAGED row when every row is kept, and counted as skipped by a
filter, which cannot read it.
Streams may walk different indexes (the "all states" list): they are then read one index after
the other, in the order the streams' indexes are given in, each index in its own order.
"""

import base64
import binascii
import heapq
import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..broker.inspect import Index, Inspector, TaskRow
from ..broker.inspect.marks import Mark, ranks_through

type StreamKey = tuple[str, str, str]  # (alias, queue, index)
SCAN_CHUNK = 500  # index entries a filtered walk reads per round trip
# The most a cursor's time or offset may be: past any rank or millisecond time, and within what
# Redis takes as a rank or score (1e20 made it refuse the read, a page blaming Redis).
MAX_CURSOR_NUMBER = 2**53
# States of a task that runs again: a done index id in one was requeued in the second before
# its worker's send added it there (broker/metrics.py), and is listed where it now waits.
RUNS_AGAIN = frozenset({"ready", "reserved", "running"})


@dataclass(frozen=True, slots=True)
class Stream:
    """One index of one queue in the listing."""

    alias: str
    queue: str
    inspector: Inspector
    index: Index

    @property
    def key(self) -> StreamKey:
        return (self.alias, self.queue, self.index.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cursor:
    """Where a page starts: the snapshot time of a newest-first listing, ranks walked, and
    the entry each rank counts through (a cursor without one, made by hand, keeps the rank)."""

    as_of_ms: int | None = None
    offsets: dict[StreamKey, int] = field(default_factory=dict)
    marks: dict[StreamKey, Mark] = field(default_factory=dict)

    @property
    def position(self) -> int:
        return sum(self.offsets.values())

    def encode(self) -> str:
        data = {
            "t": self.as_of_ms,
            "o": [
                [*key, n, *((mark.score, mark.task_id) if (mark := self.marks.get(key)) else ())]
                for key, n in self.offsets.items()
                if n
            ],
        }
        raw = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str | None) -> "Cursor | None":
        """Return the cursor in ``text``, or None if it is missing or malformed."""
        if not text:
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            as_of = data["t"]
            offsets, marks = {}, {}
            for alias, queue, index, n, *mark in data["o"]:
                key = (str(alias), str(queue), str(index))
                offsets[key] = n
                if mark:
                    marks[key] = _mark(*mark)
        except (ValueError, TypeError, KeyError, OverflowError, binascii.Error, RecursionError):
            return None
        if (as_of is not None and not _cursor_number(as_of)) or not all(
            map(_cursor_number, offsets.values())
        ):
            return None
        return cls(as_of_ms=as_of, offsets=offsets, marks=marks)


def _mark(score: object, task_id: object) -> Mark:
    """Read a cursor's mark from a URL: a score Redis can compare (not NaN) and an id."""
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise ValueError("a mark's score is not a number")
    if not isinstance(task_id, str):
        raise ValueError("a mark's id is not text")
    return Mark(float(score), task_id)


def _cursor_number(value: object) -> bool:
    """Whether a cursor read from a URL holds a whole number in 0..MAX_CURSOR_NUMBER: JSON's
    true is an int to Python (and ``True`` an argument Redis refuses)."""
    return type(value) is int and 0 <= value <= MAX_CURSOR_NUMBER


@dataclass(frozen=True, slots=True, kw_only=True)
class RowFilter:
    """Which stored fields a filter reads (the first must exist on every record), and its test."""

    fields: tuple[str, ...]
    accepts: Callable[[dict[str, str | None]], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Walk:
    """What one walk found: rows in listing order and the cursor just past the last one read."""

    rows: list[tuple[str, TaskRow]]  # (alias, row)
    start: Cursor  # where the walk started, its ranks as the indexes hold them now
    end: Cursor
    examined: int
    exhausted: bool  # True when the walk reached the end of every index
    damaged: int = 0  # records a filter skipped: a key that is not a hash, an id not UTF-8


@dataclass(frozen=True, slots=True)
class _Entry:
    stream: int
    task_id: str
    score: float
    order: tuple[int, float]  # (index position, signed score): merged ascending


class Walker:
    """Walk the indexes of ``streams`` from a cursor, forwards (older) or backwards (newer).

    ``as_of_ms`` is the snapshot time of the newest-first (done) streams.
    """

    def __init__(self, streams: Sequence[Stream], as_of_ms: int | None) -> None:
        self.streams = list(streams)
        self.indexes = list(dict.fromkeys(stream.index for stream in self.streams))
        newest_first = any(index.newest_first for index in self.indexes)
        self.as_of_ms = as_of_ms if newest_first else None
        self.bases = self._bases()

    def by_inspector(self) -> dict[Inspector, list[int]]:
        """Group stream positions by alias, so each alias's reads go in one pipeline."""
        groups: dict[Inspector, list[int]] = defaultdict(list)
        for n, stream in enumerate(self.streams):
            groups[stream.inspector].append(n)
        return groups

    def _bases(self) -> list[int]:
        """Rank of the first id at or before the snapshot, per stream (0 without one)."""
        bases = [0] * len(self.streams)
        if self.as_of_ms is None:
            return bases
        for inspector, members in self.by_inspector().items():
            done = [n for n in members if self.streams[n].index.newest_first]
            if not done:
                continue
            index = self.streams[done[0]].index
            after = inspector.ranks_after(
                index, [self.streams[n].queue for n in done], self.as_of_ms
            )
            for n in done:
                bases[n] = after[self.streams[n].queue]
        return bases

    def order(self, stream: int, score: float, backward: bool) -> tuple[int, float]:
        """Return the merge key of an entry: its index's place, then its place in the index."""
        index = self.streams[stream].index
        position = self.indexes.index(index)
        sign = -1 if index.newest_first else 1
        return (-position, -sign * score) if backward else (position, sign * score)

    def walk(
        self,
        start: Cursor,
        *,
        want: int,
        budget: int,
        keep: RowFilter | None = None,
        backward: bool = False,
    ) -> Walk:
        """Collect up to ``want`` rows that ``keep`` accepts, reading at most ``budget`` ids.

        Walking backwards from a page's start finds where the previous page starts: back over
        ``want`` rows, then over the ids a forward walk skipped before the first of them (a
        filter's misses, records gone), stopping before the row that ends the page before that.
        Pages start right after such a row (or at the very start), so this is where the previous
        page started, unless the page before it stopped at the budget among those misses.
        """
        offsets, marks = self._resolved(start, backward)
        begun, begun_at = self._cursor(offsets, marks), list(offsets)
        frontier = _Frontier(self, offsets, backward)
        taken: list[tuple[str, TaskRow]] = []
        examined, damaged, exhausted = 0, 0, False
        # Backwards, one row more is looked for: the one ending the page before, not walked past.
        wanted = want + 1 if backward else want
        while len(taken) < wanted and examined < budget:
            need = wanted - len(taken)
            size = min(need if keep is None else SCAN_CHUNK, budget - examined)
            chunk = frontier.peek(size)[:size]
            if not chunk:
                exhausted = True
                break
            accepted = self._accepted(chunk, keep)
            cut = _through_match(accepted, need)
            chunk, accepted = chunk[:cut], accepted[:cut]
            rows = self._rows([entry for entry, ok in zip(chunk, accepted, strict=True) if ok])
            walked: list[_Entry] = []
            for entry, ok in zip(chunk, accepted, strict=True):
                row = self._listed(entry, rows.get(entry.task_id)) if ok else None
                if row is not None and len(taken) == want:  # backwards: ends the page before
                    break
                walked.append(entry)
                offsets[entry.stream] += -1 if backward else 1
                if not backward:
                    marks[entry.stream] = Mark(entry.score, entry.task_id)
                damaged += ok is None
                if row is not None:
                    taken.append((self.streams[entry.stream].alias, row))
            examined += len(walked)
            frontier.consume(walked)
            if len(walked) < len(chunk):  # stopped before the page before's row
                break
        if backward:  # a stream's mark is the entry just before where the walk stopped
            moved = {n for n, o in enumerate(offsets) if o != begun_at[n]}
            marks = {n: m for n, m in marks.items() if n not in moved} | frontier.ahead(moved)
        end = self._cursor(offsets, marks)
        return Walk(
            rows=taken,
            start=begun,
            end=end,
            examined=examined,
            exhausted=exhausted,
            damaged=damaged,
        )

    def _resolved(self, start: Cursor, backward: bool) -> tuple[list[int], dict[int, Mark]]:
        """Return each stream's rank at ``start`` and its mark, by position: a marked rank is
        where its entry lies in the index now (one pipeline per alias and index); a rank
        without one is kept, capped at the index's end when walking back."""
        offsets = [start.offsets.get(s.key, 0) for s in self.streams]
        marks = {
            n: mark
            for n, s in enumerate(self.streams)
            if offsets[n] and (mark := start.marks.get(s.key))
        }
        for inspector, members in self.by_inspector().items():
            for index in self.indexes:
                marked = {
                    self.streams[n].queue: n
                    for n in members
                    if n in marks and self.streams[n].index is index
                }
                if not marked:
                    continue
                through = ranks_through(inspector, index, {q: marks[n] for q, n in marked.items()})
                for queue, n in marked.items():
                    offsets[n] = max(0, through[queue] - self.bases[n])
        if backward:
            offsets = self._within_indexes(offsets, set(marks))
        return offsets, marks

    def _cursor(self, offsets: list[int], marks: dict[int, Mark]) -> Cursor:
        return Cursor(
            as_of_ms=self.as_of_ms,
            offsets={s.key: o for s, o in zip(self.streams, offsets, strict=True)},
            marks={self.streams[n].key: mark for n, mark in marks.items() if offsets[n]},
        )

    def _within_indexes(self, offsets: list[int], marked: set[int]) -> list[int]:
        """Cap each unmarked offset at how many ids its index holds now (one read per alias
        and index).

        A cursor made by hand may lie past the end of an index; walking back from there read
        nothing and stayed where it was.
        """
        capped = list(offsets)
        for inspector, members in self.by_inspector().items():
            for index in self.indexes:
                moved = [
                    n
                    for n in members
                    if self.streams[n].index is index and offsets[n] and n not in marked
                ]
                if not moved:
                    continue
                as_of = self.as_of_ms if index.newest_first else None
                sizes = inspector.sizes(index, [self.streams[n].queue for n in moved], as_of)
                for n in moved:
                    capped[n] = min(offsets[n], sizes[self.streams[n].queue])
        return capped

    def has_more(self, cursor: Cursor) -> bool:
        """Tell whether any index holds an id past ``cursor`` (one small read per alias).

        Past its marks, wherever they lie now: a walk's end counts by position the ids it
        walked, and tasks that left the index meanwhile put it past ids still there.
        """
        offsets, _ = self._resolved(cursor, backward=False)
        return bool(_Frontier(self, offsets, backward=False).peek(1))

    def _accepted(self, chunk: list[_Entry], keep: RowFilter | None) -> list[bool | None]:
        """Tell which entries ``keep`` accepts, reading only the fields it names; None for a
        record whose key is not a hash or whose id is not UTF-8."""
        if keep is None:
            return [True] * len(chunk)
        accepted: dict[str, bool | None] = {}
        for inspector, members in self.by_inspector().items():
            wanted = set(members)
            ids = [e.task_id for e in chunk if e.stream in wanted]
            probed = inspector.probe(ids, keep.fields, self._found_in(chunk))
            for task_id, fields in zip(ids, probed, strict=True):
                accepted[task_id] = (
                    None
                    if fields is None
                    else fields[keep.fields[0]] is not None and keep.accepts(fields)
                )
        return [accepted[e.task_id] for e in chunk]

    def _listed(self, entry: _Entry, row: TaskRow | None) -> TaskRow | None:
        """Return ``entry``'s row, or None for a record gone or a done id that runs again; a
        delayed one with its due time, its score there (docs/admin.md, Tasks)."""
        index = self.streams[entry.stream].index
        if row is None or (row.state in RUNS_AGAIN and index.newest_first):
            return None
        if index is Index.DELAYED and math.isfinite(entry.score):
            return replace(row, due_ms=int(entry.score))
        return row

    def _rows(self, chunk: list[_Entry]) -> dict[str, TaskRow | None]:
        rows: dict[str, TaskRow | None] = {}
        for inspector, members in self.by_inspector().items():
            wanted = set(members)
            ids = [e.task_id for e in chunk if e.stream in wanted]
            rows.update(inspector.rows(ids, self._found_in(chunk)))
        return rows

    def _found_in(self, chunk: list[_Entry]) -> dict[str, str]:
        """Return the part each entry of ``chunk`` was read in: a stream of another shard count
        holds its records where the configured count does not look (docs/scaling.md, Changing
        the shard count)."""
        return {entry.task_id: self.streams[entry.stream].queue for entry in chunk}


class _Frontier:
    """Per-stream ids read ahead of the walk but not yet walked past: each is read once.

    ``peek`` refills the streams whose read-ahead ran out (one window each, pipelined per
    alias) and returns the merged prefix that is surely in order; ``consume`` drops what the
    walk went past.
    """

    def __init__(self, walker: Walker, offsets: list[int], backward: bool) -> None:
        self.walker = walker
        self.backward = backward
        self.buffers: list[list[_Entry]] = [[] for _ in offsets]
        self.next_rank = list(offsets)  # forwards: next rank to read; backwards: one past it
        self.more = [offset > 0 for offset in offsets] if backward else [True] * len(offsets)
        self.last: dict[int, Mark] = {}  # forwards: per stream, the last entry read

    def peek(self, size: int) -> list[_Entry]:
        self._refill(size)
        return _merge_prefix(self.buffers, self.more, backward=self.backward)

    def ahead(self, streams: set[int]) -> dict[int, Mark]:
        """Return the next entry of each of ``streams`` that has one, reading one entry each
        where none is read ahead."""
        self._refill(1, streams)
        return {n: Mark(b[0].score, b[0].task_id) for n in streams if (b := self.buffers[n])}

    def consume(self, walked: list[_Entry]) -> None:
        for n in {entry.stream for entry in walked}:
            del self.buffers[n][: sum(1 for entry in walked if entry.stream == n)]

    def _refill(self, size: int, only: set[int] | None = None) -> None:
        streams, bases = self.walker.streams, self.walker.bases
        for inspector, members in self.walker.by_inspector().items():
            for index in self.walker.indexes:
                due = [
                    n
                    for n in members
                    if streams[n].index is index
                    and not self.buffers[n]
                    and self.more[n]
                    and (only is None or n in only)
                ]
                self._catch_up(inspector, index, due)
                ranges = {}
                for n in due:
                    rank = self.next_rank[n]
                    first, last = (
                        (max(0, rank - size), rank - 1)
                        if self.backward
                        else (rank, rank + size - 1)
                    )
                    ranges[streams[n].queue] = (bases[n] + first, bases[n] + last)
                if ranges:
                    self._fill(members, index, inspector.windows(index, ranges), size)

    def _fill(
        self, members: list[int], index: Index, found: dict[str, list[tuple[str, float]]], size: int
    ) -> None:
        streams = self.walker.streams
        for n in members:
            if streams[n].index is not index or streams[n].queue not in found:
                continue
            window = [
                _Entry(n, task_id, score, self.walker.order(n, score, self.backward))
                for task_id, score in found[streams[n].queue]
            ]
            if self.backward:
                self.buffers[n] = window[::-1]
                self.next_rank[n] = max(0, self.next_rank[n] - size)
                self.more[n] = self.next_rank[n] > 0
            else:
                self.buffers[n] = window
                self.next_rank[n] += len(window)
                self.more[n] = len(window) == size
                if window:
                    self.last[n] = Mark(window[-1].score, window[-1].task_id)

    def _catch_up(self, inspector: Inspector, index: Index, due: list[int]) -> None:
        """Move each stream of ``due`` that read a window already to just after the last entry
        it read, wherever that lies now (one pipeline): counted by rank, the next window
        repeated a task for each one that arrived before it meanwhile, and skipped one for each
        that left, so an action on a filter, whose walk reads many windows while workers run,
        acted twice on one task and never on another (docs/admin.md, Actions and what they
        promise)."""
        marked = {self.walker.streams[n].queue: n for n in due if n in self.last}
        if not marked:
            return
        through = ranks_through(inspector, index, {q: self.last[n] for q, n in marked.items()})
        for queue, n in marked.items():
            self.next_rank[n] = through[queue] - self.walker.bases[n]


def _through_match(accepted: list[bool | None], need: int) -> int:
    """Return how many entries of a chunk to walk: through its ``need``-th match, or all."""
    matches = 0
    for n, ok in enumerate(accepted, 1):
        matches += ok is True
        if matches == need:
            return n
    return len(accepted)


def _merge_prefix(windows: list[list[_Entry]], more: list[bool], *, backward: bool) -> list[_Entry]:
    """Merge per-stream windows; stop where a stream with unread ids runs out of its window.

    Past that point an unread id of that stream could come first, so the order is not known.
    Ties follow the order of the streams (reversed when walking backwards), and within a stream
    Redis' own order.
    """
    left = [len(window) for window in windows]
    merged: list[_Entry] = []
    ordered = windows[::-1] if backward else windows
    for entry in heapq.merge(*ordered, key=lambda e: e.order):
        merged.append(entry)
        left[entry.stream] -= 1
        if left[entry.stream] == 0 and more[entry.stream]:
            break
    return merged
