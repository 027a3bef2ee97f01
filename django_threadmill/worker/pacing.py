"""Pacing: a task of a queue with a ``rate`` starts only on its queue's next start turn.

The acquire script spaces reservations, but a reserved task waits in the buffer while every
thread is busy, and tasks reserved apart would then start together: a worker thread with a
rate-limited task first takes the queue's start turn in Redis (pace.lua, one round trip), and
waits for it when another start of the queue came less than an interval ago, in any process
(docs/schedules.md, Per-queue limits). Other queues' tasks pay one set lookup.

A turn further off than ``LONGEST_RUNNER_WAIT_MS`` is not waited for by the thread (or the
event loop's executor thread): the task waits out of the way, still reserved and counted as
held, and goes back to the buffer when its turn is due, while the thread runs other queues'
tasks. Waited for in the thread, a "1/h" queue's task held a thread for up to an hour, and
tasks reserved while the threads were busy held one each.

A task whose queue was paused since it was reserved is handed back to READY when it asks for its
turn, its reservation released: it has not started, so it waits for the resume with the queue's
other tasks instead of starting at its turn, up to an interval into the pause.
"""

import logging
import threading
from collections.abc import Callable

from ..broker import Broker, Lease, Reservation
from ..exceptions import BrokerUnavailable
from .backoff import REDIS_BACKOFF

logger = logging.getLogger(__name__)

# The longest wait for a start turn a runner's thread does itself, in ms; a task whose turn is
# further off waits out of the way. Short waits are the usual ones (the turn of a task reserved
# just now, one reply behind the start before it) and cost a timer thread each otherwise.
LONGEST_RUNNER_WAIT_MS = 50


class Pacer:
    """Hold each task of a rate-limited queue until its start turn; hand it back if the worker
    stops first (``release``, or ``put_back`` to the buffer, whose close returns it), or its
    queue is paused (``release``)."""

    def __init__(
        self,
        broker: Broker,
        release: Callable[[list[Reservation]], bool],  # False: Redis did not take them
        put_back: Callable[[list[Reservation]], None],
    ) -> None:
        self.broker = broker
        self.release = release
        self.put_back = put_back  # the buffer's put_many: a task whose turn came runs next
        self.stopping = threading.Event()
        self._paced = frozenset(
            queue
            for queue, limit in broker.settings.queue_limits.items()
            if limit.token_interval_us is not None
        )
        self._lock = threading.Lock()
        self._waiting: dict[Lease, tuple[Reservation, threading.Timer]] = {}

    def paces(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation``'s queue has a rate (its task must wait for a turn)."""
        return reservation.lease.queue in self._paced

    def is_idle(self) -> bool:
        """Tell whether no task waits out of the way for its turn (--burst must wait for it)."""
        return not self._waiting

    def take_turn(self, reservation: Reservation, may_start: Callable[[Reservation], bool]) -> bool:
        """Block until the task of ``reservation``, of a queue with a rate, may start; False
        when it must not now: ``may_start`` said no, the worker stopped first or the queue was
        paused (then it is handed back), or its turn is far off (then it waits out of the way,
        and is put back in the buffer when the turn is due).

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
            if wait_ms is None:  # paused since it was reserved: READY again until the resume
                if self.release([reservation]):
                    return False
                failures += 1  # Redis did not take it: ask again (paused still?) after a backoff
                self.stopping.wait(REDIS_BACKOFF.after(failures))
                continue
            if wait_ms == 0:
                return True
            if wait_ms > LONGEST_RUNNER_WAIT_MS and self._wait_out_of_the_way(reservation, wait_ms):
                return False
            failures = 0
            self.stopping.wait(wait_ms / 1000)
        self.release([reservation])
        return False

    def _wait_out_of_the_way(self, reservation: Reservation, wait_ms: float) -> bool:
        """Put ``reservation`` back in the buffer in ``wait_ms``, when its turn is due; False
        if the worker stopped meanwhile (the caller hands it back)."""
        with self._lock:
            if self.stopping.is_set():
                return False
            timer = threading.Timer(wait_ms / 1000, self._turn_due, (reservation.lease,))
            timer.name, timer.daemon = "threadmill-pacer", True
            self._waiting[reservation.lease] = (reservation, timer)
            timer.start()
        return True

    def _turn_due(self, lease: Lease) -> None:
        """Put the task of ``lease`` back in the buffer: its turn is due (a timer thread)."""
        with self._lock:
            waiting = self._waiting.get(lease)
            if waiting is not None:  # else the stop put it back already
                self.put_back([waiting[0]])  # before it leaves _waiting: it is never idle
                del self._waiting[lease]

    def stop(self) -> None:
        """End every wait for a turn: a thread waiting hands its task back; tasks waiting out
        of the way go back to the buffer, whose close returns them for release (at shutdown)."""
        self.stopping.set()
        with self._lock:
            waiting, self._waiting = list(self._waiting.values()), {}
            for _, timer in waiting:
                timer.cancel()
            self.put_back([reservation for reservation, _ in waiting])
        for _, timer in waiting:
            timer.join()
