"""Damaged records: what the scripts set aside in each queue's ``P:damaged``, and what is said.

A script that walks several records handles each by itself; a record it cannot read (a key of
another type, one missing from where its index says) is set aside with the reason and left out
of the call (docs/lifecycle.md, Damaged records). Here the client logs what a call set aside,
and an operator's tools read and clear the set.
"""

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..exceptions import PayloadError
from ..wording import command_line
from .keys import queue_of_part
from .layouts import Layouts
from .raw_replies import RAW, escaped, stored_id, unescaped
from .scripts import ScriptCall, ScriptName
from .types import stored_note

logger = logging.getLogger(__name__)


def log_set_aside(alias: str, queue: str, count: int, script: str) -> None:
    """Say that ``script`` set ``count`` records of ``queue`` (a queue or one of its shards)
    aside, and where to look: the listing of the queue (it refuses a shard's name) on ``alias``
    (``--backend``; without it, that of another alias with a queue of the same name)."""
    logger.warning(
        "Damaged records set aside queue=%s count=%d script=%s backend=%s (the admin's queues "
        "page, or %s, shows them with the reason)",
        queue,
        count,
        script,
        alias,
        command_line(alias, f"threadmill_queue damaged {queue_of_part(queue)}"),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DamagedRecord:
    """One entry of a queue's ``P:damaged``: what was set aside, when, by which script, why."""

    queue: str
    id: str  # a task id, or a guard key inside the queue ("u:<digest>", "fired:<schedule>")
    at_ms: int | None  # Redis time; None if the entry was not written by a script
    script: str
    reason: str


def parse_entry(queue: str, task_id: str, text: str) -> DamagedRecord:
    """Read one ``P:damaged`` value, ``"<ms> <script>: <reason>"``, forgiving anything else."""
    at_ms, script, reason = stored_note(text)
    return DamagedRecord(queue=queue, id=task_id, at_ms=at_ms, script=script, reason=reason)


def set_aside_error(alias: str, task_id: str, key: str | None, note: DamagedRecord) -> PayloadError:
    """Return the error for the task ``task_id``, whose record at ``key`` a script set aside as
    damaged (``note``, its ``P:damaged`` entry, listed on ``alias``): it never runs nor ends, so
    its workflow fails naming it (docs/workflows.md, A step set aside)."""
    why = f"{note.script}: {note.reason}" if note.script else note.reason
    listing = command_line(alias, f"threadmill_queue damaged {note.queue}")
    return PayloadError(
        f"Task {task_id!r} was set aside as damaged and will not run ({why}). Look at its "
        f"record (redis-cli HGETALL {key!r}; {listing} lists it), then delete it or restore "
        "the record (docs/lifecycle.md, Damaged records)."
    )


def oldest_first(entries: list[DamagedRecord]) -> list[DamagedRecord]:
    """Return ``entries`` oldest first, ties (and entries of no time) by id."""
    return sorted(entries, key=lambda entry: (entry.at_ms or 0, entry.id))


class DamagedRecords(Layouts):
    """The damaged-records section of the Broker: read and forget what scripts set aside.

    Each reaches every shard count a queue kept keys under (``every_part``): the reaper of any
    count sets records aside in an earlier count's parts too (docs/scaling.md, Changing the
    shard count).
    """

    MAX_LISTED = 1000  # entries read per queue part: a listing stays bounded

    def damaged(
        self, queues: Sequence[str], every: Mapping[str, list[str]] | None = None
    ) -> list[DamagedRecord]:
        """Return what the scripts set aside in ``queues`` (each shard's, of every count),
        queue by queue and oldest first, read in one round trip after ``every_parts``' (or
        from ``every``, the parts of each queue a caller read already).

        Read as bytes: acquire sets aside an id that is not UTF-8 under its own bytes; it is
        listed escaped (``NotUtf8Id``), where decoding it failed the whole read.
        """
        every = self.every_parts(queues) if every is None else every
        parts = [(queue, part) for queue in queues for part in every[queue]]
        with self.translated_errors(read=True), self.client.pipeline(transaction=False) as pipe:
            for _, part in parts:
                key = self.queue_keys(part).damaged
                pipe.execute_command("HSCAN", key, 0, "COUNT", self.MAX_LISTED, **RAW)
            replies = pipe.execute()
        by_queue: dict[str, list[DamagedRecord]] = {queue: [] for queue in queues}
        for (queue, _), (_, found) in zip(parts, replies, strict=True):
            by_queue[queue] += [
                parse_entry(queue, stored_id(key), escaped(value)) for key, value in found.items()
            ]
        return [entry for entries in by_queue.values() for entry in oldest_first(entries)]

    def set_aside_note(self, task_id: str, part: str | None = None) -> DamagedRecord | None:
        """Return the entry of ``task_id`` in ``part``'s ``P:damaged`` (None: the part the
        settings' shard count gives), or None when it lists no such id (one HGET)."""
        part = self.part_of(task_id) if part is None else part
        if part is None:
            return None
        with self.translated_errors(read=True):
            text = self.raw_command("HGET", self.queue_keys(part).damaged, task_id)
        return None if text is None else parse_entry(queue_of_part(part), task_id, escaped(text))

    def damaged_counts(
        self, queues: Sequence[str], every: Mapping[str, list[str]] | None = None
    ) -> dict[str, int]:
        """Return how many entries each of ``queues`` has set aside, every shard's of every
        count, in one round trip after ``every_parts``' (or from ``every``, as ``damaged``):
        ``damaged`` reads at most MAX_LISTED a part, and a listing says what it left out."""
        every = self.every_parts(queues) if every is None else every
        parts = [(queue, part) for queue in queues for part in every[queue]]
        with self.translated_errors(read=True), self.client.pipeline(transaction=False) as pipe:
            for _, part in parts:
                pipe.hlen(self.queue_keys(part).damaged)
            sizes = pipe.execute()
        counts = dict.fromkeys(queues, 0)
        for (queue, _), size in zip(parts, sizes, strict=True):
            counts[queue] += int(size)
        return counts

    def forget_all_damaged(self, queue: str) -> Iterator[list[DamagedRecord]]:
        """Drop every entry of ``queue``'s damaged set (every shard's of every count), a batch
        of at most MAX_LISTED a call; the keys themselves are left as they are. Yield each
        batch dropped, oldest first, as soon as it is dropped.

        Each forget_damaged.lua call reads and drops a batch in one step, so the entries
        yielded are exactly those dropped: one set aside meanwhile is dropped and yielded,
        never dropped unseen. A caller that stops iterating (its output was closed, Redis
        failed) stops the dropping: what it was given is all that was dropped.
        """
        for part in self.every_part(queue):
            call = ScriptCall(
                ScriptName.FORGET_DAMAGED,
                (self.queue_keys(part).damaged,),
                (self.MAX_LISTED,),
                raw=True,
            )
            left = 1  # until a call answers that the set holds no more
            while left:
                left, *entries = self._run(call)
                dropped = [
                    parse_entry(queue, stored_id(key), escaped(value))
                    for key, value in zip(entries[::2], entries[1::2], strict=True)
                ]
                if dropped:
                    yield oldest_first(dropped)

    def forget_damaged(self, queue: str, ids: Sequence[str]) -> Iterator[list[str]]:
        """Drop the entries ``ids`` of ``queue``'s damaged set (every shard's of every count),
        a round trip per part after ``every_part``'s; the keys themselves are left as they are.
        Yield the ids each part dropped, if any, as soon as it answers.

        A part Redis fails (its set of another type, its node of a Redis Cluster lost) stops
        the forget there: what was yielded is all that was dropped, but for that part's call
        when it may have been applied (``MaybeApplied``). Sent in one pipeline, every part but
        the failed one dropped its entries, and the caller was told the error alone.

        An id is taken as ``damaged`` lists it: one listed escaped (``\\xff``, a byte that is
        not UTF-8) names the entry stored under that byte.
        """
        for part in self.every_part(queue):
            key = self.queue_keys(part).damaged
            with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
                for task_id in ids:
                    pipe.hdel(key, *{task_id.encode(), unescaped(task_id)})
                counts = pipe.execute()
            dropped = [task_id for task_id, count in zip(ids, counts, strict=True) if count]
            if dropped:
                yield dropped
