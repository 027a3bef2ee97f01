"""The workflow drainer: advances workflows from the outboxes of the queues a process serves.

Outboxes this process's own finishes filled are drained at once (the broker's outbox signal);
every ``POLL_S`` it also looks at all its queues' outboxes, for entries a killed process or a
cancel left, however busy its own finishes keep it: those of every shard count the queues kept
keys under, as a worker of an earlier ``queue_shards`` may have left them (docs/scaling.md,
Changing the shard count). Draining is its own thread so that acks never wait on it
(workflows/advance.py).
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping

from ..broker import Broker
from ..broker.down_nodes import by_node
from ..exceptions import BrokerUnavailable
from ..wording import listed_values
from .failing_calls import FailingCalls
from .role import RoleThread

logger = logging.getLogger(__name__)

POLL_S = 5.0  # how often every outbox of the served queues is looked at
OUTBOXES = "outboxes"  # what the look at every outbox fails to read, for FailingCalls


class WorkflowDrainer(RoleThread):
    """Drain outboxes until stopped; drain what the last finishes filled before it ends."""

    def __init__(
        self,
        broker: Broker,
        queues: tuple[str, ...],
        drain_part: Callable[[str], int],
        on_drained: Callable[[], None],
        on_crash: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__("threadmill-workflows", on_crash)
        self.clock = clock
        self.signal = broker.outbox_signal
        self.broker = broker
        self.queues = queues
        self.drain_part = drain_part
        self.on_drained = on_drained  # steps may have been enqueued: a --burst looks again
        self._busy = False
        self._other_parts: list[str] = []  # of the queues' other shard counts, as last read
        self._winding_down = threading.Event()  # set by wind_down: own finishes only
        # The look at every outbox is said once as it begins to fail, at -v 2 after, once as it
        # works again; so is each outbox one primary of a Redis Cluster down keeps it from
        # reading, for as long as it is away, the others drained (broker/outbox_looks.py).
        self._failing = FailingCalls(logger, clock)

    def loop(self) -> None:
        self._round(self._all_filled)  # what an earlier process left
        looked_at = self.clock()
        while not self.stopping.is_set():
            # Due by the clock, not by a quiet spell: a stream of its own finishes would
            # otherwise put off the look at what others left for as long as it lasts.
            self.signal.filled.wait(max(0.0, looked_at + POLL_S - self.clock()))
            self._round(self.signal.take)
            if self.clock() - looked_at >= POLL_S:
                if not self._winding_down.is_set():
                    self._round(self._all_filled)
                looked_at = self.clock()
        self._round(self.signal.take)

    def wind_down(self) -> None:
        """Drain from now on only what this process's finishes filled: the process stops, and
        steps it enqueued from other outboxes would wait for others (a --burst run whose last
        process took them as it stopped ended with their workflow unfinished)."""
        self._winding_down.set()

    def wake(self) -> None:
        self.signal.filled.set()

    def is_idle(self) -> bool:
        """Tell whether nothing this process's finishes noted waits to be drained (for
        --burst: a step about to be enqueued is work left)."""
        return not self._busy and not self.signal.pending()

    def _round(self, parts_to_drain: Callable[[], set[str]]) -> None:
        self._busy = True  # before the take: is_idle never sees parts taken and not drained
        try:
            parts = parts_to_drain()
            self._drain(parts)
        finally:
            self._busy = False
        if parts:
            self.on_drained()

    def _all_filled(self) -> set[str]:
        try:
            look = self.broker.outboxes_of_every_count(self.queues, self._other_parts)
        except BrokerUnavailable as exc:
            self._failing.failed(
                (OUTBOXES,), "Workflow outboxes unreadable, looking again later error=%s", exc
            )
            return set()
        self._other_parts = look.other
        self._failing.answered(OUTBOXES, "Workflow outboxes readable again")
        self._say_unread(look.unread)
        return set(look.found)

    def _say_unread(self, unread: Mapping[str, BrokerUnavailable]) -> None:
        """Say what a Redis Cluster node that did not answer kept the look from reading, one
        line per node (its error), the others drained; and what it reads again."""
        for error, names in by_node(unread).items():
            self._failing.failed(
                names,
                "Workflow outboxes unreadable on a node, the others are drained, looking again "
                "later unread=%s error=%s",
                listed_values(names),
                error,
            )
        for name in sorted(self._failing.failing() - {OUTBOXES} - set(unread)):
            self._failing.answered(name, "Workflow outboxes readable again read=%s", name)

    def _drain(self, parts: set[str]) -> None:
        for part in sorted(parts):
            try:
                self.drain_part(part)
            except BrokerUnavailable as exc:  # its entries stay: the next look drains them
                logger.warning("Workflow outbox not drained part=%s error=%s", part, exc)
