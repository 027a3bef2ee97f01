"""Which queue parts a reap pass reaches while a Redis Cluster primary does not answer.

A primary down with no replica to take over (``cluster-require-full-coverage no``) holds some
queue parts: a queue's own keys, a shard of a sharded queue, a part of a shard count the queue
was served with before. The pass leaves those out of every call, and reaps, trims and drains
the others: a queue with a shard still served is reaped there, not skipped whole
(docs/lifecycle.md, After an outage or a stall). A shard whose reap call failed (a key of
another type) is left out of the pass's later reap calls the same way.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..broker import Broker
from ..broker.down_nodes import by_node
from ..exceptions import BrokerUnavailable


@dataclass(frozen=True, slots=True, kw_only=True)
class PassParts:
    """The queue parts of one reap pass, and those it leaves out (``pass_parts``)."""

    configured: dict[str, list[str]]  # per queue, its parts under the configured shard count
    # Per queue the pass reaps, its configured parts still served and whose reap call has not
    # failed (``leave_out``).
    reaped: dict[str, list[str]]
    other: Mapping[str, Sequence[str]]  # per queue, its other shard counts' parts (all of them)
    # The parts on a Redis Cluster primary that did not answer, each with its error (one per
    # node): no call of the pass goes there.
    down: Mapping[str, BrokerUnavailable]
    skipped: dict[str, BrokerUnavailable]  # queues with no configured part served, and why
    partly: dict[str, BrokerUnavailable]  # queues reaped with a configured part left out, why

    def drained(self) -> list[str]:
        """Return the parts whose workflow outbox the pass drains: every count's parts of the
        queues it reaps, those left out aside."""
        every = (part for queue in self.reaped for part in self._every(queue))
        return [part for part in every if part not in self.down]

    def leave_out(self, queue: str, failed: Mapping[str, BrokerUnavailable]) -> None:
        """Reap ``queue`` without its ``failed`` parts for the rest of the pass: their call
        failed (a key of another type in one shard: docs/lifecycle.md, Keys of another type),
        and would fail again. The queue is reaped in part, as one with a part on a node that
        did not answer."""
        self.reaped[queue] = [part for part in self.reaped[queue] if part not in failed]
        self.partly.setdefault(queue, next(iter(failed.values())))

    def left_by_node(self) -> dict[BrokerUnavailable, list[str]]:
        """Return, per error (one per node), what the pass leaves out: the queues it skips
        whole by name, then the parts of the queues it reaps."""
        every = (part for queue in self.reaped for part in self._every(queue))
        return by_node(
            self.skipped | {part: self.down[part] for part in every if part in self.down}
        )

    def _every(self, queue: str) -> list[str]:
        """Return the parts of ``queue`` under every shard count, the configured one's first."""
        return [*self.configured[queue], *self.other[queue]]


def pass_parts(
    broker: Broker,
    queues: Sequence[str],
    other: Mapping[str, Sequence[str]],
    down: Mapping[str, BrokerUnavailable],
) -> PassParts:
    """Return the parts of ``queues`` (``other``: the parts of their other shard counts) a
    pass reaches with the parts in ``down`` left out."""
    configured = {queue: broker.parts(queue) for queue in queues}
    reaped: dict[str, list[str]] = {}
    skipped: dict[str, BrokerUnavailable] = {}
    partly: dict[str, BrokerUnavailable] = {}
    for queue, parts in configured.items():
        if served := [part for part in parts if part not in down]:
            reaped[queue] = served
        if errors := [down[part] for part in parts if part in down]:
            (partly if served else skipped)[queue] = errors[0]
    return PassParts(
        configured=configured,
        reaped=reaped,
        other=other,
        down=down,
        skipped=skipped,
        partly=partly,
    )
