"""What a reap pass did, per queue and in all: the reaper's report (worker/reaper.py)."""

from dataclasses import dataclass, field

from ..exceptions import BrokerUnavailable, MaybeApplied
from ..wording import listed_names


@dataclass(slots=True)
class QueueReap:
    """What one pass did (or, in a dry run, would do) on one queue."""

    released: int = 0  # expired reservations put back to READY
    failed: int = 0  # expired running attempts recorded FAILED
    retried: int = 0  # expired running attempts scheduled for another attempt
    stale: int = 0  # expired attempts another reaper or a late ack settled first
    set_aside: int = 0  # records that cannot be read, set aside as damaged


@dataclass(slots=True)
class ReapReport:
    """The outcome of one ``reap_once`` pass, per queue, with dry-run lines."""

    dry_run: bool = False
    queues: dict[str, QueueReap] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    advanced: int = 0  # workflows this pass advanced (an entry whose step is gone advanced none)
    # Queues whose part of the pass failed while Redis answered, with why; the others were
    # reaped (docs/lifecycle.md, Keys of another type).
    failures: dict[str, BrokerUnavailable] = field(default_factory=dict)
    # Queues of ``failures`` reaped all the same but for a part the pass left out (on a Redis
    # Cluster node that did not answer, or a shard whose reap call failed).
    partly: list[str] = field(default_factory=list)
    # Why Redis stopped answering part-way: the queues of the round it stopped in, those the
    # round had yet to finish, are in ``failures`` (the queues after one whose earlier
    # settlement it stopped at were not reaped); or, every queue reaped, why draining the
    # outboxes stopped as Redis went (``advanced`` then reads 0). What the pass did before is
    # in the counts all the same.
    unreachable: BrokerUnavailable | None = None
    # Why draining the workflow outboxes failed after the queues were reaped (or failed, in
    # ``failures``) while Redis answered (its scripts lost again just after they were loaded,
    # an ACL rule): the entries left wait for the next pass (``advanced`` reads 0). It was put
    # in ``unreachable`` before, and read as Redis stopping.
    advance_failed: BrokerUnavailable | None = None
    # Queues with expired leases left when a stop asked the pass to end (``reap_pass``'s
    # ``stopped``): it ends between two rounds, what it did counted and nothing half done.
    stopped: list[str] = field(default_factory=list)
    # Why the queues registered in Redis are unknown (the Redis Cluster node of the queue set
    # did not answer): the pass went through the configured ones alone.
    unknown: BrokerUnavailable | None = None

    @property
    def released(self) -> int:
        return sum(counts.released for counts in self.queues.values())

    @property
    def failed(self) -> int:
        return sum(counts.failed for counts in self.queues.values())

    @property
    def retried(self) -> int:
        return sum(counts.retried for counts in self.queues.values())

    @property
    def stale(self) -> int:
        return sum(counts.stale for counts in self.queues.values())

    @property
    def set_aside(self) -> int:
        return sum(counts.set_aside for counts in self.queues.values())


def what_failed(report: ReapReport) -> str:
    """Say what failed in a pass with ``unreachable``, ``failures`` or ``advance_failed``, and
    whether the rest was reaped: the words of ``threadmill_reap``'s error and of a worker
    supervisor's WARNING alike (the supervisor said "Reap pass failed" of a pass that had
    reaped every other queue).

    Redis stopping part-way stops the pass at that round. Else it names the queues that failed
    while Redis answered: with none left (a read-only replica at LOCATION, a single queue),
    "the other queues were reaped" told the operator of a reap that settled nothing. A call
    Redis did not answer may have settled its leases all the same: "none was reaped" would deny
    it. A queue reaped but for a part left out is said to be, not to have failed whole. A
    failed advance of workflows is said after the queues' (its error too, as the one shown
    after these words is the first queue's), or alone: it said Redis stopped answering.
    """
    if report.unreachable:
        return (
            "Reap pass stopped part-way, Redis stopped answering (the queues not reaped wait for "
            "the next pass)"
        )
    if not report.failures:
        return (
            "Advancing workflows failed after every queue was reaped (the outbox entries left "
            "wait for the next pass)"
        )
    advance = report.advance_failed
    then = f", then advancing workflows failed ({advance})" if advance else ""
    return _queues_failed(report) + then


def _queues_failed(report: ReapReport) -> str:
    """Say which queues of a pass failed while Redis answered (``what_failed``)."""
    if report.partly:
        whole = [queue for queue in report.failures if queue not in report.partly]
        also = f"queue {listed_names(whole)} and " if whole else ""
        partly = listed_names(report.partly)
        return f"Reap of {also}part of queue {partly} failed, the rest was reaped"
    failed = listed_names(report.failures)
    if len(report.failures) < len(report.queues):
        return f"Reap of queue {failed} failed, the other queues were reaped"
    if any(isinstance(error, MaybeApplied) for error in report.failures.values()):
        return f"Reap of every queue failed ({failed}), some perhaps after settling leases"
    return f"Reap of every queue failed ({failed}), none was reaped"


def failed_with(report: ReapReport) -> BrokerUnavailable | None:
    """Return the error shown after ``what_failed``'s words, or None for a pass that did not
    fail: Redis's that stopped it, else the first queue's, else advancing workflows'."""
    first = next(iter(report.failures.values()), None)
    return report.unreachable or first or report.advance_failed
