"""The supervisor's own Redis work on its main thread: a reap pass every ``--reap-interval``,
so a deployment without ``threadmill_reap`` is safe, the schedules' due slots, and signing off
a worker process that died. A stop waits for none of them (docs/worker.md, Shutdown)."""

import logging
import time
from collections.abc import Callable

from ..backend import ThreadmillTaskBackend
from ..exceptions import BrokerUnavailable
from ..schedules.scheduler import Scheduler
from .backoff import REDIS_BACKOFF
from .interruptible import Interrupted, call_unless_stopped
from .options import WorkerOptions
from .reaper import reap_once
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)


class Chores:
    """When the supervisor next reaps and fires schedules, and doing so when due.

    ``stopping`` says a stop signal came: nothing is done then, and a call under way is left
    behind. ``after_call`` runs once each call's wait ended: the supervisor acts on the
    signals that came meanwhile.
    """

    def __init__(
        self,
        options: WorkerOptions,
        backend: ThreadmillTaskBackend,
        wakeup: WakeupPipe,
        stopping: Callable[[], bool],
        after_call: Callable[[], None],
    ) -> None:
        self.options = options
        self.backend = backend
        self._wakeup = wakeup
        self._stopping = stopping
        self._after_call = after_call
        self.next_reap = time.monotonic()
        self.scheduler = Scheduler(backend.pipeline) if backend.settings.schedules else None
        self.next_schedule: float | None = time.monotonic() if self.scheduler else None
        self._schedule_failures = 0  # in a row: the retry waits REDIS_BACKOFF after them

    def run_due(self) -> None:
        """Reap, then fire the schedules' due slots, each if its time came."""
        self._reap_if_due()
        self._fire_schedules_if_due()

    def due_times(self) -> list[float]:
        """Return when the next reap and the next schedule are due (monotonic)."""
        due = [self.next_reap] if self.options.reap_interval_s else []
        return due if self.next_schedule is None else [*due, self.next_schedule]

    def _call_redis[T](self, role: str, call: Callable[[], T]) -> T:
        """Make a call to Redis from the main thread that a stop does not wait for:
        ``Interrupted`` once a signal came first, the call left behind (the command exits
        without it). A signal meanwhile is acted on once the wait ends."""
        try:
            return call_unless_stopped(
                role, call, self._wakeup.sleep_until, self._wakeup.poke, self._stopping
            )
        except Interrupted:
            logger.info(
                "Stopping without waiting for Redis call=%s (it has not answered; the "
                "command exits without it)",
                role,
            )
            raise
        finally:
            self._after_call()

    def sign_off(self, worker_id: str) -> None:
        """Sign off a worker process that died (killed, crashed): it could not sign itself
        off, and ``threadmill_health`` would count it live until its last renewal is lease_ttl
        old. What it held stays leased, for the reaper."""
        try:
            self._call_redis(
                "sign-off", lambda: self.backend.broker.sign_off(worker_id, self.options.queues)
            )
        except Interrupted:
            return
        except BrokerUnavailable as exc:
            logger.warning(
                "Dead worker process not signed off, counted live until its lease would end "
                "worker_id=%s error=%s",
                worker_id,
                exc,
            )

    def _reap_if_due(self) -> None:
        """Settle expired leases now and then, so a deployment without threadmill_reap is safe."""
        interval = self.options.reap_interval_s
        if not interval or time.monotonic() < self.next_reap or self._stopping():
            return
        self.next_reap = time.monotonic() + interval
        try:
            self._call_redis("reap", lambda: reap_once(self.backend))
        except Interrupted:
            return
        except BrokerUnavailable as exc:
            logger.warning("Reap pass failed error=%s", exc)

    def _fire_schedules_if_due(self) -> None:
        """Enqueue the schedules' due slots: every supervisor may, each slot is stored once."""
        due = self.next_schedule
        if self.scheduler is None or due is None or time.monotonic() < due or self._stopping():
            return
        try:
            wait = self._call_redis("schedules", self.scheduler.fire_due)
        except Interrupted:
            return
        except BrokerUnavailable as exc:
            self._schedule_failures += 1
            retry_s = REDIS_BACKOFF.after(self._schedule_failures)
            logger.warning("Schedules not fired retry_in_s=%.1f error=%s", retry_s, exc)
            self.next_schedule = time.monotonic() + retry_s
            return
        self._schedule_failures = 0
        self.next_schedule = None if wait is None else time.monotonic() + wait.total_seconds()
