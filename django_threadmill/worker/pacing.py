"""Pacing: a task of a queue with a ``rate`` starts only on its queue's next start turn.

The acquire script spaces reservations, but a reserved task waits in the buffer while every
thread is busy, and tasks reserved apart would then start together: a worker thread with a
rate-limited task first takes the queue's start turn in Redis (pace.lua, one round trip), and
waits for it when another start of the queue came less than an interval ago, in any process
(docs/schedules.md, Per-queue limits). Other queues' tasks pay one set lookup.
"""

import logging
import threading
from collections.abc import Callable

from ..broker import Broker, Reservation
from ..exceptions import BrokerUnavailable
from .backoff import REDIS_BACKOFF

logger = logging.getLogger(__name__)


class Pacer:
    """Hold each task of a rate-limited queue until its start turn; hand it back if the worker
    stops first (``release``)."""

    def __init__(self, broker: Broker, release: Callable[[list[Reservation]], object]) -> None:
        self.broker = broker
        self.release = release
        self.stopping = threading.Event()
        self._paced = frozenset(
            queue
            for queue, limit in broker.settings.queue_limits.items()
            if limit.token_interval_ms is not None
        )

    def paces(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation``'s queue has a rate (its task must wait for a turn)."""
        return reservation.lease.queue in self._paced

    def take_turn(self, reservation: Reservation, may_start: Callable[[Reservation], bool]) -> bool:
        """Block until the task of ``reservation``, of a queue with a rate, may start; False
        when it must not: ``may_start`` said no, or the worker stopped first (then it is handed
        back).

        ``may_start`` is asked before each try for a turn, not once after the turn came: a turn
        taken is then never spent on a task that does not start (its lease was lost while it
        waited, its workflow stopped it), which would cost the queue a whole interval.
        """
        failures = 0
        while not self.stopping.is_set():
            if not may_start(reservation):
                return False
            try:
                wait_ms = self.broker.start_turn(reservation.lease.queue)
            except BrokerUnavailable as exc:
                failures += 1
                wait_s = REDIS_BACKOFF.after(failures)
                logger.warning("Start turn failed, retrying in %.1fs error=%s", wait_s, exc)
                self.stopping.wait(wait_s)
                continue
            if wait_ms == 0:
                return True
            failures = 0
            self.stopping.wait(wait_ms / 1000)
        self.release([reservation])
        return False

    def stop(self) -> None:
        """End every wait for a turn: those tasks are handed back (at shutdown)."""
        self.stopping.set()
