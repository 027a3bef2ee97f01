"""Tasks left under another shard count: what changing ``queue_shards`` leaves behind.

A task lives in the shard its id picks among the queue's N (keys.py), so workers, the reaper,
``get_result`` and the admin with another N never look where it is. The checks ask this section
before a worker or reaper starts (docs/scaling.md, Changing the shard count).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from ..codec.ids import queue_of
from ..codec.text import digits_int
from ..exceptions import BrokerUnavailable
from .calls import Command, read_each
from .connection import unreachable
from .down_nodes import by_node
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
    # Those of ``queues`` with a part on that node, each with its error: unread too; after
    # ``Layouts.reached``, those with a part on any node that does not answer.
    unreached: dict[str, BrokerUnavailable] = field(default_factory=dict)

    @property
    def served(self) -> list[str]:
        """The queues whose every part is on a node that answers: those a reader reads."""
        return [queue for queue in self.queues if queue not in self.unreached]

    def unreached_by_node(self) -> dict[BrokerUnavailable, list[str]]:
        """Return the ``unreached`` queues by their node's error (one error per node), that of
        the queue set's node first when the set was not read (``unknown``), with none of them
        or some."""
        first: dict[BrokerUnavailable, list[str]] = (
            {} if self.unknown is None else {self.unknown: []}
        )
        return first | by_node(self.unreached)


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
        names = QueueNames(queues=queues, other=other, recorded=recorded, unknown=unknown)
        if unknown is None:
            return names
        return replace(
            names, unreached=self._on({self.node_of(self.keyspace.queues): unknown}, names)
        )

    def reached(self, names: QueueNames) -> QueueNames:
        """Return ``names`` with ``unreached`` naming each queue with a part on any Redis
        Cluster primary that does not answer, with that node's error: one read per node of
        their parts, in one round trip (that of the queue set, known down, not asked again).

        Each reader of many queues sends one pipeline, which spans every node: the health
        probe, the queues page, the scrape and the listings read the ``served`` queues, and
        name the others (docs/scaling.md, Batches that span queues)."""
        if not self.fails_by_node:
            return names
        down = {self.node_of(self.keyspace.queues): names.unknown} if names.unknown else {}
        probes: dict[str, str] = {}  # per node not known down, the ready key of a part there
        for part in chain(*self._parts_by_queue(names).values()):
            key = self.queue_keys(part).ready
            if (node := self.node_of(key)) not in down:
                probes.setdefault(node, key)
        return replace(names, unreached=self._on(down | self._not_answering(probes), names))

    def _not_answering(self, probes: Mapping[str, str]) -> dict[str, BrokerUnavailable]:
        """Return those of the nodes of ``probes`` (each with a key of its own) that do not
        answer a read of their key, each with its error; raise any other error."""
        if not probes:
            return {}
        replies = self._read_each([(("EXISTS", key), {}) for key in probes.values()])
        down: dict[str, BrokerUnavailable] = {}
        for node, reply in zip(probes, replies, strict=True):
            if isinstance(reply, Exception):
                error = self.translated(reply, read=True)
                if not unreachable(error):
                    raise error
                down[node] = error
        return down

    def _read_each(self, reads: Sequence[tuple[Command, dict[str, Any]]]) -> list[Any]:
        """Return per read its reply or its error, a Redis Cluster node that does not answer
        failing its own reads alone (calls.py, ``read_each``); raise when no node answered."""
        with self.translated_errors(read=True):
            return read_each(self.client, self.down_nodes, reads)

    def _on(
        self, down: Mapping[str, BrokerUnavailable], names: QueueNames
    ) -> dict[str, BrokerUnavailable]:
        """Return those of ``names``' queues with a part on a node of ``down`` (by name), each
        with that node's error."""
        parts = self._parts_by_queue(names)
        on = self.parts_on(down, chain(*parts.values()))
        return {
            queue: error
            for queue, its in parts.items()
            if (error := next((on[part] for part in its if part in on), None)) is not None
        }

    def _parts_by_queue(self, names: QueueNames) -> dict[str, list[str]]:
        """Return the parts of each of ``names``' queues, those of its other counts read too."""
        return {queue: [*self.parts(queue), *names.other.get(queue, [])] for queue in names.queues}

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
