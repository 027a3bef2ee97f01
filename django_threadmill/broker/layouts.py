"""Tasks left under another shard count: what changing ``queue_shards`` leaves behind.

A task lives in the shard its id picks among the queue's N (keys.py), so workers, the reaper,
``get_result`` and the admin with another N never look where it is. The checks ask this section
before a worker or reaper starts (docs/scaling.md, Changing the shard count).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

from ..codec.ids import queue_of
from ..codec.text import digits_int
from ..exceptions import BrokerUnavailable
from .connection import unreachable
from .keys import SHARD_SEPARATOR, queue_parts, shard_of
from .raw_replies import RAW
from .reads import Reads, known_queues


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueNames:
    """The queues of an alias as ``Layouts.queue_names`` read them, for the reaper's pass, the
    health probe and the queues page."""

    queues: list[str]
    # The parts of every other shard count of each queue, and the layouts set they come from,
    # read as bytes (``other_parts_in``): read with ``every_count`` alone, else empty.
    other: dict[str, list[str]] = field(default_factory=dict)
    recorded: list[bytes] = field(default_factory=list)
    # Why the queue set and the layouts set could not be read (their Redis Cluster node did
    # not answer), ``queues`` then being the configured ones alone; None when they were read.
    unknown: BrokerUnavailable | None = None
    # Those of ``queues`` with a part on that node, each with its error: unread too.
    unreached: dict[str, BrokerUnavailable] = field(default_factory=dict)


class Layouts(Reads):
    """The shard-count section of the Broker: which queues hold tasks under another N."""

    def left_behind(self, queues: Iterable[str]) -> dict[str, dict[int, int]]:
        """Return, per queue of ``queues`` that has any, the shard counts other than the
        configured one that hold waiting, delayed or held tasks, and how many each.

        Looked at: N = 1 (the queue's own keys, also those of data older than sharding) and
        every N recorded at enqueue (``KeySpace.layouts``). One SMEMBERS, then one pipeline of
        ZCARDs; a key of another type counts as nothing here (its queue's scripts say it).
        """
        candidates = self._other_layouts(queues)
        parts = [
            (queue, shards, part)
            for queue, layouts in candidates.items()
            for shards in layouts
            for part in queue_parts(self.settings.alias, queue, shards)
        ]
        if not parts:
            return {}
        with self.translated_errors(read=True), self.client.pipeline(transaction=False) as pipe:
            for *_, part in parts:
                keys = self.queue_keys(part)
                for key in (keys.ready, keys.delayed, keys.leases):
                    pipe.zcard(key)
            replies = iter(pipe.execute(raise_on_error=False))
        found: dict[str, dict[int, int]] = {}
        for queue, shards, _ in parts:
            held = sum(n for n in (next(replies) for _ in range(3)) if isinstance(n, int))
            if held:
                by_count = found.setdefault(queue, {})
                by_count[shards] = by_count.get(shards, 0) + held
        return found

    def other_parts(self, queues: Iterable[str]) -> dict[str, list[str]]:
        """Return, per queue of ``queues``, the parts of every shard count other than the
        configured one it may have kept keys under (N = 1 and each N recorded at enqueue),
        for the readers that sum what every count recorded: one SMEMBERS."""
        return self._parts_of(self._other_layouts(queues))

    def every_part(self, queue: str) -> list[str]:
        """Return the parts of ``queue`` under its configured shard count, then those of every
        other count it may have kept keys under (``other_parts``): one SMEMBERS."""
        return self.every_parts([queue])[queue]

    def every_parts(self, queues: Sequence[str]) -> dict[str, list[str]]:
        """Return ``every_part`` of each of ``queues``: one SMEMBERS."""
        other = self.other_parts(queues)
        return {queue: [*self.parts(queue), *other[queue]] for queue in queues}

    def queue_names(self, configured: Iterable[str], *, every_count: bool = False) -> QueueNames:
        """Return ``queues(configured)``; with ``every_count``, the ``other_parts`` of each
        too, both sets read in one round trip: the reaper's pass and the queues page sum every
        count's parts (docs/scaling.md, Changing the shard count).

        On a Redis Cluster whose node of those sets (``{alias}``) does not answer, return the
        ``configured`` queues and their N = 1 parts, why the rest is unknown, and which of
        them are on that node: the queues on the nodes that answer are reaped and shown
        meanwhile (docs/lifecycle.md, After an outage or a stall)."""
        sets = [self.keyspace.queues, *([self.keyspace.layouts] if every_count else [])]
        unknown = None
        try:
            with self.translated_errors(read=True), self.client.pipeline(False) as pipe:
                for key in sets:
                    pipe.execute_command("SMEMBERS", key, **RAW)
                seen, *layouts = pipe.execute()
        except BrokerUnavailable as exc:
            if not (self.settings.cluster and unreachable(exc)):
                raise
            seen, layouts, unknown = [], [], exc
        queues = known_queues(seen, configured)
        recorded = list(layouts[0]) if layouts else []
        other = self.other_parts_in(queues, recorded) if every_count else {}
        if unknown is None:
            return QueueNames(queues=queues, other=other, recorded=recorded)
        parts = {queue: [*self.parts(queue), *other.get(queue, [])] for queue in queues}
        down = self.parts_on({self.node_of(self.keyspace.queues): unknown}, chain(*parts.values()))
        unreached = {queue: unknown for queue in queues if any(p in down for p in parts[queue])}
        return QueueNames(queues=queues, other=other, unknown=unknown, unreached=unreached)

    def other_parts_in(
        self, queues: Iterable[str], recorded: Iterable[bytes]
    ) -> dict[str, list[str]]:
        """Return ``other_parts(queues)`` from ``recorded``, the layouts set read as bytes in
        a round trip of the caller's."""
        return self._parts_of(self._counts_besides_configured(queues, recorded))

    def parts_of_id(self, task_id: str, recorded: Iterable[bytes]) -> list[str]:
        """Return the part that holds ``task_id`` under each shard count its queue may have
        kept keys under, the configured count's first (none for an id not of ours), from
        ``recorded``, the layouts set read as bytes: a task's shard is picked from its id
        alone, so its page opens whichever count stored it (docs/scaling.md, Changing the
        shard count)."""
        queue = queue_of(task_id)
        if queue is None:
            return []
        other = self._counts_besides_configured([queue], recorded)[queue]
        alias = self.settings.alias
        return [
            self.part_in(queue, task_id),
            *(queue_parts(alias, queue, shards)[shard_of(task_id, shards)] for shards in other),
        ]

    def _parts_of(self, layouts: dict[str, list[int]]) -> dict[str, list[str]]:
        """Return, per queue of ``layouts``, the parts of each of its shard counts."""
        return {
            queue: [
                part
                for shards in counts
                for part in queue_parts(self.settings.alias, queue, shards)
            ]
            for queue, counts in layouts.items()
        }

    def recorded_layouts(self) -> Iterable[bytes]:
        """Return the layouts set (``KeySpace.layouts``) read as bytes: one SMEMBERS, for
        ``other_parts_in``."""
        with self.translated_errors(read=True):
            recorded: Iterable[bytes] = self.raw_command("SMEMBERS", self.keyspace.layouts)
            return recorded

    def _other_layouts(self, queues: Iterable[str]) -> dict[str, list[int]]:
        """Return the shard counts each queue may hold tasks under, besides its configured one."""
        return self._counts_besides_configured(queues, self.recorded_layouts())

    def _counts_besides_configured(
        self, queues: Iterable[str], recorded: Iterable[bytes]
    ) -> dict[str, list[int]]:
        """Return, per queue of ``queues``, the counts of ``recorded`` (the layouts set, read
        as bytes) and N = 1, less its configured count."""
        counts: dict[str, set[int]] = {queue: {1} for queue in queues}
        for member in recorded:
            queue, _, shards = member.decode(errors="replace").rpartition(SHARD_SEPARATOR)
            count = digits_int(shards)
            if queue in counts and count is not None and count > 1:
                counts[queue].add(count)
        return {
            queue: sorted(shards - {self.settings.shards_of(queue)})
            for queue, shards in counts.items()
        }
