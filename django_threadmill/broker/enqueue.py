"""Enqueue: store new tasks, one script call per queue, all queues in one round trip."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from ..conf.topology import Durability
from ..exceptions import BrokerUnavailable, MaybeApplied, PartlyEnqueued
from .calls import Command, asend_each, send_each
from .core import BrokerCore
from .scripts import ScriptCall, ScriptName
from .types import Enqueued, NewTask

WAKE_TOKEN_CAP = 16  # wake tokens kept per queue: enough to wake that many idle fetchers at once


def _enqueued(outcome: Enqueued | BrokerUnavailable) -> Enqueued:
    if isinstance(outcome, BrokerUnavailable):
        raise outcome
    return outcome


@dataclass(frozen=True, slots=True)
class Part:
    """The tasks of one queue that go to one of its parts (the queue itself, or a shard)."""

    queue: str
    name: str
    tasks: Sequence[NewTask]


def merged_outcome(
    queue: str, outcomes: list[tuple[Part, Enqueued | BrokerUnavailable]]
) -> Enqueued | BrokerUnavailable:
    """Return one queue's outcome from those of its parts (one part: that outcome itself)."""
    if len(outcomes) == 1:
        return outcomes[0][1]
    stored = [o for _, o in outcomes if isinstance(o, Enqueued)]
    failed = [o for _, o in outcomes if isinstance(o, BrokerUnavailable)]
    if not failed:
        return Enqueued(stored=sum(o.stored for o in stored), existing=_existing(stored))
    maybe = [o for o in failed if isinstance(o, MaybeApplied)]
    if not stored and len(maybe) in (0, len(failed)):
        return failed[0]  # every part failed alike: its error says what was written
    return partly_enqueued(queue, outcomes)


def _existing(stored: list[Enqueued]) -> dict[str, str]:
    """Return the unique duplicates the parts found: id -> the id of the task it equals."""
    return {task_id: holder for o in stored for task_id, holder in o.existing.items()}


def partly_enqueued(
    queue: str, outcomes: list[tuple[Part, Enqueued | BrokerUnavailable]]
) -> PartlyEnqueued:
    """Say which ids of a sharded queue were written, which may have been (their part's call
    may have been applied: its error is a ``MaybeApplied``) and that the others were not."""

    def ids_of(kind: type) -> frozenset[str]:
        return frozenset(t.id for part, o in outcomes if isinstance(o, kind) for t in part.tasks)

    written, maybe_written = ids_of(Enqueued), ids_of(MaybeApplied)
    total = sum(len(part.tasks) for part, _ in outcomes)
    errors = [o for _, o in outcomes if isinstance(o, BrokerUnavailable)]
    said = f"{len(written)} of the {total} tasks for sharded queue {queue!r} were written"
    if maybe_written:
        said += (
            f", {len(maybe_written)} may have been (their ids are in this error's "
            ".maybe_written: check get_result(id) before enqueuing them again, since a new "
            "enqueue makes new tasks)"
        )
    if len(written) + len(maybe_written) < total:
        said += " and the others were not"
    reasons = " ".join(dict.fromkeys(str(error) for error in errors))
    retry = "the others" if not maybe_written else "the calls of the ids in neither"
    error = PartlyEnqueued(
        f"{said}: {reasons} The ids written are in this error's .written; retry only {retry}.",
        written,
        _existing([o for _, o in outcomes if isinstance(o, Enqueued)]),
        maybe_written,
        {t.id: o for part, o in outcomes if isinstance(o, BrokerUnavailable) for t in part.tasks},
    )
    # A coalesced caller of a part that failed is given that part's own error, in .errors
    # (batching.py); the cause chains one of them for the traceback, one that may be applied first.
    error.__cause__ = next((o for o in errors if isinstance(o, MaybeApplied)), errors[0])
    return error


class Enqueueing(BrokerCore):
    """The enqueue section of the Broker."""

    def _enqueue_call(self, queue: str, tasks: Sequence[NewTask]) -> ScriptCall:
        keys = self.queue_keys(queue)
        # Guards go first, so a batch without any costs the script one "0" (enqueue.lua).
        guards: list[str | int] = []
        args: list[str | int] = []
        for position, task in enumerate(tasks, start=1):
            if task.guard is not None:
                guards += [position, task.guard.kind, task.guard.name, task.guard.value_ms]
            run_after = "" if task.run_after_ms is None else task.run_after_ms
            args += [task.id, task.payload, task.priority, run_after]
        return ScriptCall(
            ScriptName.ENQUEUE,
            (
                keys.record_prefix,
                keys.ready,
                keys.delayed,
                keys.seq,
                keys.wake,
                keys.unique_prefix,
                keys.fired_prefix,
                keys.damaged,
                keys.leases,
            ),
            (WAKE_TOKEN_CAP, len(guards) // 4, *guards, *args),
        )

    def _new_queues(self, groups: Mapping[str, Sequence[NewTask]]) -> list[str]:
        return [queue for queue in groups if queue not in self._known_queues]

    def _parts(self, groups: Mapping[str, Sequence[NewTask]]) -> list[Part]:
        """Split each queue's tasks by shard; an unsharded queue is its own single part."""
        parts: list[Part] = []
        for queue, tasks in groups.items():
            if self.settings.shards_of(queue) == 1:
                parts.append(Part(queue, queue, tasks))
                continue
            split: dict[str, list[NewTask]] = {}
            for task in tasks:
                split.setdefault(self.part_in(queue, task.id), []).append(task)
            parts += [Part(queue, part, group) for part, group in split.items()]
        return parts

    @staticmethod
    def _enqueued(tasks: Sequence[NewTask], reply: int | list[Any]) -> Enqueued:
        """Read enqueue.lua's reply: a count, or a list when some unique tasks were duplicates."""
        if isinstance(reply, int):
            return Enqueued(stored=reply, existing={})
        stored, *duplicates = reply
        return Enqueued(
            stored=int(stored),
            existing={
                tasks[int(position) - 1].id: holder
                for position, holder in zip(duplicates[::2], duplicates[1::2], strict=True)
            },
        )

    def _registration(self, new_queues: list[str]) -> list[Command]:
        """Return the SADDs that make ``new_queues`` (and their shard counts) known, sent
        before their first tasks."""
        if not new_queues:
            return []
        commands: list[Command] = [("SADD", self.keyspace.queues, *new_queues)]
        if layouts := self.sharded_layouts(new_queues):
            commands.append(("SADD", self.keyspace.layouts, *layouts))
        return commands

    def _enqueue_replies(
        self,
        groups: Mapping[str, Sequence[NewTask]],
        parts: list[Part],
        new_queues: list[str],
        registered: list[Any],
        outcomes: list[Any],
    ) -> list[Enqueued | BrokerUnavailable]:
        """Pair per-queue outcomes with what was stored or translated errors."""
        if new_queues and not any(isinstance(reply, Exception) for reply in registered):
            self._known_queues.update(new_queues)
        by_queue: dict[str, list[tuple[Part, Enqueued | BrokerUnavailable]]] = {}
        for part, outcome in zip(parts, outcomes, strict=True):
            by_queue.setdefault(part.queue, []).append(
                (part, self._enqueued_or_error(part.tasks, outcome))
            )
        return [merged_outcome(queue, by_queue[queue]) for queue in groups]

    def _enqueued_or_error(
        self, tasks: Sequence[NewTask], reply: Any
    ) -> Enqueued | BrokerUnavailable:
        if not isinstance(reply, Exception):
            return self._enqueued(tasks, reply)
        return self.translated(reply)

    def _bare(self, calls: list[ScriptCall], new_queues: list[str]) -> bool:
        """Tell whether the enqueue is one plain EVALSHA: the common case, no pipeline."""
        return len(calls) == 1 and not new_queues and self.settings.durability is Durability.LOCAL

    def enqueue_groups(
        self, groups: Mapping[str, Sequence[NewTask]]
    ) -> list[Enqueued | BrokerUnavailable]:
        """Store each queue's tasks atomically, all queues in one round trip.

        Return, per queue in ``groups`` order, what was stored (and which unique tasks were
        duplicates) or the error that refused that queue's call (one queue can fail while
        another is written), including a write not confirmed per OPTIONS['durability']. A
        sharded queue is one call per shard in the same round trip, each atomic; if some
        fail, its error is ``PartlyEnqueued`` naming the ids written. An error that loses the
        whole round trip is raised.
        """
        parts = self._parts(groups)
        calls = [self._enqueue_call(part.name, part.tasks) for part in parts]
        new_queues = self._new_queues(groups)
        if self._bare(calls, new_queues):
            return [self._enqueued(parts[0].tasks, self._run(calls[0]))]
        with self.translated_errors():
            registered, outcomes = send_each(
                self.client,
                self._scripts,
                self.settings,
                calls,
                down=self.down_nodes,
                before=self._registration(new_queues),
                confirm=True,
            )
        return self._enqueue_replies(groups, parts, new_queues, registered, outcomes)

    async def aenqueue_groups(
        self, groups: Mapping[str, Sequence[NewTask]]
    ) -> list[Enqueued | BrokerUnavailable]:
        """Async twin of ``enqueue_groups``: the same calls, sent by the asyncio client."""
        parts = self._parts(groups)
        calls = [self._enqueue_call(part.name, part.tasks) for part in parts]
        new_queues = self._new_queues(groups)
        client, scripts = self._async_client()
        async with self.atranslated_errors():
            if self._bare(calls, new_queues):
                return [self._enqueued(parts[0].tasks, await self._arun(calls[0]))]
            registered, outcomes = await asend_each(
                client,
                scripts,
                self.settings,
                calls,
                down=self.down_nodes,
                before=self._registration(new_queues),
                confirm=True,
            )
        outcomes = await self._aeach_translated(outcomes)
        return self._enqueue_replies(groups, parts, new_queues, registered, outcomes)

    def enqueue(self, queue: str, tasks: Sequence[NewTask]) -> Enqueued:
        """Store ``tasks`` in ``queue`` atomically (one script call per shard); say what was
        stored."""
        return _enqueued(self.enqueue_groups({queue: tasks})[0])

    async def aenqueue(self, queue: str, tasks: Sequence[NewTask]) -> Enqueued:
        """Async twin of ``enqueue``."""
        return _enqueued((await self.aenqueue_groups({queue: tasks}))[0])

    def register_queues(self, queues: Iterable[str]) -> None:
        """Make ``queues`` known to the reaper and the admin before anything is enqueued."""
        queues = list(queues)
        with self.translated_errors():
            known = self.client.smismember(self.keyspace.queues, queues)
            missing = [queue for queue, found in zip(queues, known, strict=True) if not found]
            try:
                if missing:
                    self.client.sadd(self.keyspace.queues, *missing)
                if layouts := self.sharded_layouts(queues):
                    self.client.sadd(self.keyspace.layouts, *layouts)
            except redis.exceptions.OutOfMemoryError:
                # A worker restarting while Redis is full must still start: a queue missing
                # here holds no task yet (enqueue adds its name first), so nothing is hidden.
                # Its first enqueue records it then, with the shard count of a sharded one.
                queues = [q for q in queues if q not in missing and self.settings.shards_of(q) == 1]
        self._known_queues.update(queues)
