"""The supervisor's own Redis work on its main thread: a reap pass every ``--reap-interval``,
so a deployment without ``threadmill_reap`` is safe, the schedules' due slots, and signing off
a worker process that died. A stop waits for none of them past a grace that lets a pass, or
the schedules, end between two rounds (docs/worker.md, Signals reach the main thread)."""

import logging
import time
from collections.abc import Callable
from functools import partial

from ..backend import ThreadmillTaskBackend
from ..broker.inspect import Inspector
from ..broker.raw_replies import controls_escaped
from ..codec.times import from_ms
from ..exceptions import BrokerUnavailable
from ..schedules.scheduler import Scheduler
from ..wording import listed_values
from .backoff import REDIS_BACKOFF
from .interruptible import PASS_GRACE_S, Interrupted, call_unless_stopped
from .options import WorkerOptions
from .reap_hold import ReapHold
from .reap_report import failed_with, what_failed
from .wakeup import WakeupPipe

logger = logging.getLogger(__name__)


class Chores:
    """When the supervisor next reaps and fires schedules, and doing so when due.

    ``stopping`` says a stop signal came: nothing is done then, and a call under way ends
    between two rounds, or is left behind once ``PASS_GRACE_S`` passed, or at once when
    ``forced`` says a second signal came. ``after_call`` runs as soon as a stop came, and once
    each call's wait ended: the supervisor acts on the signals that came meanwhile.
    """

    def __init__(
        self,
        options: WorkerOptions,
        backend: ThreadmillTaskBackend,
        wakeup: WakeupPipe,
        stopping: Callable[[], bool],
        after_call: Callable[[], None],
        *,
        forced: Callable[[], bool] = lambda: False,
    ) -> None:
        self.options = options
        self.backend = backend
        self._wakeup = wakeup
        self._stopping = stopping
        self._forced = forced
        self._after_call = after_call
        self.next_reap = time.monotonic()
        self.reap_hold = ReapHold(backend.settings.renewal_s)
        self.next_tick = time.monotonic()
        self.scheduler = Scheduler(backend.pipeline) if backend.settings.schedules else None
        self.next_schedule: float | None = time.monotonic() if self.scheduler else None
        self._schedule_failures = 0  # in a row: the retry waits REDIS_BACKOFF after them

    def run_due(self) -> None:
        """Reap, then fire the schedules' due slots, each if its time came. The reap hold
        hears that the supervisor runs: a gap is a stall of its host."""
        if self.options.reap_interval_s:
            self.reap_hold.tick()
            self.next_tick = time.monotonic() + self.reap_hold.tick_s
        self._reap_if_due()
        self._fire_schedules_if_due()

    def due_times(self) -> list[float]:
        """Return when the next reap, its hold's next look at the clock and the next
        schedule are due (monotonic)."""
        due = [self.next_reap, self.next_tick] if self.options.reap_interval_s else []
        return due if self.next_schedule is None else [*due, self.next_schedule]

    def _call_redis[T](self, role: str, call: Callable[[], T]) -> T:
        """Make a call to Redis from the main thread that a stop waits for no longer than
        ``PASS_GRACE_S``, and a second signal not at all: ``Interrupted`` once a signal came
        first and the call did not end within it, the call left behind (the command exits
        without it)."""
        try:
            return call_unless_stopped(
                role,
                call,
                self._sleep_then_act,
                self._wakeup.poke,
                self._stopping,
                grace_s=PASS_GRACE_S,
                forced=self._forced,
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

    def _sleep_then_act(self, done: Callable[[], bool], timeout_s: float | None) -> None:
        """Sleep on the wake-up pipe until ``done`` or ``timeout_s`` passed, then act on the
        signals that came meanwhile: the processes start their stop while a pass ends its
        round, and are killed as a second signal comes during its grace."""
        self._wakeup.sleep_until(done, timeout_s)
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

    def say_paused(self) -> None:
        """Say, at start, each queue served that is paused: who paused it, when and why, as its
        tasks wait for a resume (docs/lifecycle.md, Pausing a queue). One pipelined read; a
        Redis away says nothing here, as each process says so as it waits for it."""
        inspector = Inspector(self.backend.broker)
        try:
            pauses = self._call_redis("paused", partial(inspector.paused, self.options.queues))
        except (Interrupted, BrokerUnavailable):
            return
        for queue, pause in pauses.items():
            at = from_ms(pause.at_ms)
            logger.warning(
                "Queue paused, its tasks wait until it is resumed queue=%s by=%s at=%s reason=%s",
                queue,
                controls_escaped(pause.by) or "unknown",
                "unknown" if at is None else at.isoformat(timespec="seconds"),
                controls_escaped(pause.reason),
            )

    def _reap_if_due(self) -> None:
        """Settle expired leases now and then, so a deployment without threadmill_reap is safe."""
        interval = self.options.reap_interval_s
        if not interval or time.monotonic() < self.next_reap or self._stopping():
            return
        self.next_reap = time.monotonic() + interval
        try:
            report = self._call_redis(
                "reap", partial(self.reap_hold.run, self.backend, stopped=self._stopping)
            )
        except Interrupted:
            return
        except BrokerUnavailable as exc:  # Redis did not answer at the start
            logger.warning("Reap pass failed error=%s", exc)
            return
        # Redis gone part-way, a queue's key of another type, or advancing workflows failing
        # once the queues were reaped: the line says what was reaped, as threadmill_reap's does
        # (docs/lifecycle.md, Keys of another type).
        if failed := failed_with(report):
            logger.warning("%s error=%s", what_failed(report), failed)
            return
        if report.stopped:
            logger.info(
                "Reap pass ended between two rounds on a stop signal, expired leases left "
                "queues=%s (the next pass settles them)",
                listed_values(report.stopped),
            )

    def _fire_schedules_if_due(self) -> None:
        """Enqueue the schedules' due slots: every supervisor may, each slot is stored once."""
        due = self.next_schedule
        if self.scheduler is None or due is None or time.monotonic() < due or self._stopping():
            return
        try:
            wait = self._call_redis("schedules", partial(self.scheduler.fire_due, self._stopping))
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
