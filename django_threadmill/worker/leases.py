"""The leases one worker process holds, and the thread that keeps them alive."""

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable

from ..broker import Broker, Lease
from ..exceptions import BrokerRefused, BrokerUnavailable, PartlyRenewed
from .backoff import REDIS_BACKOFF
from .failing_calls import FailingCalls
from .role import RoleThread

logger = logging.getLogger(__name__)
REGISTER_EVERY_S = 60.0  # how often a heartbeat checks that Redis still names the queues served
# The lease keeper's longest sleep between looks at the lease clock: a sleep runs on the
# monotonic clock, which stands still while the host is suspended (see ``lease_clock``).
RESUME_CHECK_S = 1.0
# Most task ids kept whose run here outlived its lease: one per such task until its next start
# here, so a task another process runs next does not stay for good.
OUTLIVED_KEPT = 1000
_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)  # Linux only
# A renewal some queues or all did not take: the leases held, those held in the queues that
# did not take it (unrenewed), the error.
RENEWAL_FAILED = "Lease renewal failed held=%d unrenewed=%d error=%s"


def lease_clock() -> float:
    """Return seconds on the clock leases are judged by: CLOCK_BOOTTIME where the platform has
    it, else the monotonic clock. A lease's deadline is on the Redis clock, which runs on while
    this host is suspended (a laptop's lid, a paused VM); CLOCK_MONOTONIC stands still then, and
    a host resumed after a suspend past lease_ttl took its lapsed leases for fresh
    (docs/worker.md, Leases)."""
    if _BOOTTIME is None:
        return time.monotonic()
    return time.clock_gettime(_BOOTTIME)


class HeldLeases:
    """Thread-safe set of the leases this process holds (reserved or running).

    With ``lease_ttl_s``, it also knows when Redis last set each lease's deadline: a lease
    not renewed for that long by ``lease_clock`` may have lapsed (docs/worker.md, Leases).
    """

    def __init__(self, lease_ttl_s: float | None = None) -> None:
        self._leases: dict[str, Lease] = {}
        self._ending: set[Lease] = set()  # held, and a call that ends them is on its way
        # By task id: when the call that last reserved or renewed its lease was sent
        # (lease_clock). Redis set the deadline lease_ttl after it ran, so after that send.
        self._confirmed: dict[str, float] = {}
        self._lease_ttl_s = lease_ttl_s
        # Task ids whose last run here outlived its lease, oldest first (see ``note_if_outlived``).
        self._outlived: dict[str, None] = {}
        self._lock = threading.Lock()

    def add(self, leases: list[Lease], sent_at: float | None = None) -> None:
        """Hold ``leases``, reserved by a call sent at ``sent_at`` (lease_clock; default now)."""
        confirmed = lease_clock() if sent_at is None else sent_at
        with self._lock:
            for lease in leases:
                self._leases[lease.task_id] = lease
                self._confirmed[lease.task_id] = confirmed

    def confirm(self, leases: list[Lease], sent_at: float) -> None:
        """Note that a renewal sent at ``sent_at`` (lease_clock) pushed ``leases``' deadlines."""
        with self._lock:
            for lease in leases:
                if self._leases.get(lease.task_id) == lease:
                    self._confirmed[lease.task_id] = sent_at

    def may_have_lapsed(self, lease: Lease) -> bool:
        """Tell whether ``lease`` went unrenewed for lease_ttl by ``lease_clock``: the process
        was frozen (SIGSTOP, a paused VM), its host suspended, or it was cut off from Redis, and
        the reaper may have handed its task to another worker before the lease keeper could find
        out. No lock, as ``holds``."""
        if self._lease_ttl_s is None:
            return False
        confirmed = self._confirmed.get(lease.task_id, float("-inf"))
        return lease_clock() - confirmed >= self._lease_ttl_s

    def note_if_outlived(self, lease: Lease) -> None:
        """Remember ``lease``'s task if its run here, just ended, outlived the lease (lost, or
        unrenewed for lease_ttl): its next start here is written before it runs
        (``TaskRunner.begin``; docs/worker.md, Leases)."""
        if self.holds(lease) and not self.may_have_lapsed(lease):
            return
        with self._lock:
            self._outlived[lease.task_id] = None
            if len(self._outlived) > OUTLIVED_KEPT:
                del self._outlived[next(iter(self._outlived))]

    def outlived(self, task_id: str) -> bool:
        """Tell whether the last run of ``task_id`` here outlived its lease. No lock, as
        ``holds``."""
        return task_id in self._outlived

    def forget_outlived(self, task_id: str) -> None:
        """Forget that ``task_id``'s run here outlived its lease: a start was recorded since."""
        with self._lock:
            self._outlived.pop(task_id, None)

    def ending(self, leases: list[Lease]) -> None:
        """Mark ``leases`` as being ended by this process: call it before their outcome or
        release is sent. They are still renewed until ``discard``, as that call may be retried."""
        with self._lock:
            self._ending.update(
                lease for lease in leases if self._leases.get(lease.task_id) == lease
            )

    def discard(self, leases: list[Lease]) -> None:
        """Forget ``leases``; a newer lease on the same task id (a retry re-acquired) stays."""
        with self._lock:
            self._forget(leases)

    def forget_lost(self, leases: list[Lease]) -> list[Lease]:
        """Forget ``leases``, which a renewal found lost; return those whose loss is news.

        A lease this process no longer holds, or was ending, is no news: the renewal may have
        met the outcome or release this process sent, and the task may have moved on since (a
        retry reserved again). Had another owner taken it first, the outcome's call says so
        ("Ack not recorded"), and a release hands back only what was still ours. Checked
        under the lock once the renewal returned, against marks made before the ending call
        was sent, so no interleaving of the two calls warns for a lease that ended normally.
        """
        with self._lock:
            news = [
                lease
                for lease in leases
                if self._leases.get(lease.task_id) == lease and lease not in self._ending
            ]
            self._forget(leases)
            return news

    def _forget(self, leases: list[Lease]) -> None:
        """Drop ``leases`` and their marks (the caller holds the lock)."""
        for lease in leases:
            self._ending.discard(lease)
            if self._leases.get(lease.task_id) == lease:
                del self._leases[lease.task_id]
                del self._confirmed[lease.task_id]

    def holds(self, lease: Lease) -> bool:
        """Tell whether ``lease`` is still ours (not lost to the reaper).

        The lease itself, not its task id: once lost, the task may be released and reserved
        again by this very process, and the old reservation, still in the buffer, must not run
        beside the new one. Asked once per task, so it takes no lock: a dict lookup is atomic,
        and writers hold the lock only against each other.
        """
        return self._leases.get(lease.task_id) == lease

    def snapshot(self) -> list[Lease]:
        with self._lock:
            return list(self._leases.values())


class LeaseKeeper(RoleThread):
    """Renew every held lease with one batched call per interval (docs/worker.md, Leases).

    The same call is the process's heartbeat in each queue it serves, held leases or not, so an
    idle worker still shows in the admin and in ``threadmill_workers``.
    """

    def __init__(
        self,
        broker: Broker,
        worker_id: str,
        queues: tuple[str, ...],
        held: HeldLeases,
        interval_s: float,
        on_crash: Callable[[], None],
        on_refused: Callable[[BrokerRefused], None] = lambda error: None,
        threads: Callable[[], int] = lambda: 0,
        on_first_renewal: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__("threadmill-lease-keeper", on_crash)
        self.threads = threads  # the live worker threads, reported with each renewal
        # Redis refused this worker's credentials or rights: an idle process's renewals may be
        # the only calls that meet it (an empty queue's acquire reads no clock). The test
        # worker's keeper passes none: its drain meets the refusal itself.
        self.on_refused = on_refused
        # Called once Redis took the first renewal: from then on the process counts live.
        self.on_first_renewal: Callable[[], None] | None = on_first_renewal
        self.broker = broker
        self.worker_id = worker_id
        self.queues = queues
        self.held = held
        self.interval_s = interval_s
        # When the heartbeat next checks the queue names: the process's start just wrote them.
        self._register_at = time.monotonic() + REGISTER_EVERY_S
        self._failures = 0  # renewals failed in a row
        self._failing = FailingCalls(logger)  # the queue parts whose renewal fails

    def loop(self) -> None:
        # The first renewal at start: the admin, the metrics and threadmill_health see a new
        # process at once, not an interval later.
        since = self.renew()
        while not self._stopped_before(since + self._wait_s()):
            since = self.renew()
        self._sign_off()

    def _stopped_before(self, due: float) -> bool:
        """Wait until ``due`` (lease_clock); tell whether the process stopped first. Looked at
        every RESUME_CHECK_S at least: a sleep stands still while the host is suspended, and a
        host resumed with its leases nearly lapsed renews at once, not up to an interval late,
        when a reaper elsewhere may have handed its running tasks out (docs/worker.md, Leases)."""
        while (left_s := due - lease_clock()) > 0:
            if self.stopping.wait(min(left_s, RESUME_CHECK_S)):
                return True
        return self.stopping.is_set()

    def _wait_s(self) -> float:
        """Return the wait before the next renewal: the interval, or a capped backoff after a
        failed one, so a renewal missed as Redis went away is tried again soon after it is back:
        the leases then ride out an outage of up to two thirds of lease_ttl, where a whole
        interval's wait left one third (docs/worker.md, Leases)."""
        if not self._failures:
            return self.interval_s
        return min(REDIS_BACKOFF.after(self._failures), self.interval_s)

    def _sign_off(self) -> None:
        """Say this process stopped: it is no longer counted live (a probe would otherwise
        count it for a lease after it exited)."""
        try:
            self.broker.sign_off(self.worker_id, self.queues)
        except BrokerUnavailable as exc:
            logger.warning(
                "Stopped worker not signed off, counted live until its lease would end error=%s",
                exc,
            )

    def renew(self) -> float:
        """Renew every held lease; return when the wait for the next renewal starts
        (lease_clock): at the send of a call Redis took, as its leases' deadlines run from
        there, or at the failure of one it did not, as the backoff does. A call some queues
        took and others did not is a failure that still counts the leases it renewed."""
        leases = self.held.snapshot()
        sent_at = lease_clock()
        try:
            lost = self.broker.renew(self.worker_id, leases, self.queues, threads=self.threads())
        except PartlyRenewed as exc:
            answered = [lease for lease in leases if lease.task_id in exc.answered]
            self._taken(answered, exc.lost, sent_at)
            self._say_renewed(but=exc.failed)
            return self._partly_failed(leases, exc)
        except BrokerUnavailable as exc:
            logger.warning(RENEWAL_FAILED, len(leases), len(leases), exc)
            return self._failed(exc)
        self._failures = 0
        self._taken(leases, lost, sent_at)
        self._say_renewed()
        self._register_if_due()
        return sent_at

    def _taken(self, leases: list[Lease], lost: Iterable[str], sent_at: float) -> None:
        """Note that Redis took the renewal of ``leases``, sent at ``sent_at``: those in
        ``lost`` are forgotten, the others' deadlines were pushed."""
        if self.on_first_renewal is not None:
            said, self.on_first_renewal = self.on_first_renewal, None
            said()
        lost_ids = set(lost)
        gone = [lease for lease in leases if lease.task_id in lost_ids]
        for lease in self.held.forget_lost(gone):
            logger.warning("Lease lost task_id=%s (reaped or settled elsewhere)", lease.task_id)
        self.held.confirm([lease for lease in leases if lease.task_id not in lost_ids], sent_at)

    def _partly_failed(self, leases: list[Lease], exc: PartlyRenewed) -> float:
        """Say a renewal that some queues did not take, and count it; return when it failed.

        Said at WARNING each time while this process holds leases in those queues: unrenewed for
        lease_ttl, a reaper hands their tasks to another worker while they may still run here.
        Else only the process's heartbeat there failed (a Redis Cluster primary down, idle
        queues): said at WARNING as a queue begins to fail, at DEBUG after, and at INFO once it
        takes a renewal again (``_say_renewed``); it was a WARNING every retry, 550 an hour.
        """
        unrenewed = sum(lease.task_id not in exc.answered for lease in leases)
        self._failing.failed(
            exc.failed, RENEWAL_FAILED, len(leases), unrenewed, exc, matters=unrenewed > 0
        )
        return self._failed(exc.error)

    def _say_renewed(self, but: Collection[str] = ()) -> None:
        """Say of each queue part whose renewals failed, but those in ``but``, that it took
        this one."""
        for part in self._failing.failing() - set(but):
            self._failing.answered(part, "Lease renewal works again queue=%s", part)

    def _failed(self, cause: BrokerUnavailable) -> float:
        """Count a renewal that failed, in every queue or some; return when, for the backoff."""
        self._failures += 1
        if isinstance(cause, BrokerRefused):
            self.on_refused(cause)
        return lease_clock()

    def _register_if_due(self) -> None:
        """Put the served queues back in the backend's set of queues if Redis lost them, at
        most every REGISTER_EVERY_S: the admin and the reaper find a queue there (docs/worker.md,
        Leases), and enqueue and a process's start write it only once."""
        if time.monotonic() < self._register_at:
            return
        try:
            self.broker.register_queues(self.queues)
        except BrokerUnavailable as exc:
            logger.warning("Queue names not checked error=%s", exc)
            return
        self._register_at = time.monotonic() + REGISTER_EVERY_S
