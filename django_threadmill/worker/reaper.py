"""The lease reaper: settle every lease whose worker went silent, on every queue of a backend.

An expired *reservation* (prefetched, never started) goes back to READY in its place; the
broker's reap script does that. An expired *running* attempt is settled here through the
fenced finish script with the attempt's own token, as FAILED with a ``LeaseExpired`` error or
as a retry when the task's policy says so (docs/design.md, Reserved is not running), but
never as a retry for a workflow step whose workflow was cancelled (worker/cancelled_steps.py).
Several reapers and a late ack may race: the token check lets exactly one of them record the
attempt's outcome. Each pass then drains every queue's workflow outbox (workflows/advance.py).
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..broker import (
    Ack,
    ExpiredAttempt,
    Finish,
    Outcome,
    Reaped,
    checked_batch_size,
    reap_mark,
)
from ..broker.layouts import QueueNames
from ..broker.server_identity import ServerSeen
from ..codec.payloads import decode_payload, load_task
from ..codec.results import parse_error, task_result
from ..compat import TaskResult, TaskResultStatus, task_finished
from ..exceptions import BrokerUnavailable, LeaseExpired
from ..observability.signals import heard, said_already
from ..workflows.advance import drain_parts
from . import outcome
from .cancelled_steps import CancelledSteps
from .reap_parts import PassParts, pass_parts

if TYPE_CHECKING:
    from ..backend import ThreadmillTaskBackend

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500  # expired leases looked at per reap script call
# Most metrics.lua calls a pass makes to trim one queue's done index (calls): each removes at
# most 1,000 expired ids, about a millisecond of Redis, so a pass clears 100,000 an idle queue
# kept (docs/observability.md, Metrics and the done index).
TRIM_CALLS_PER_PASS = 100


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
    # Why Redis stopped answering part-way: the queues of the round it stopped in, those the
    # round had yet to finish, are in ``failures`` (the queues after one whose earlier
    # settlement it stopped at were not reaped); or, every queue reaped, why draining the
    # outboxes stopped (``advanced`` then reads 0). What the pass did before is in the counts
    # all the same.
    unreachable: BrokerUnavailable | None = None
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


def _iso(ms: int | None) -> str:
    """Return a lease deadline (Redis time, ms) in ISO 8601, UTC; "unknown" for a score set
    by hand that is no time ("-inf", before the year 1): its lease lapsed all the same."""
    if ms is None:
        return "unknown"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    except (ValueError, OverflowError, OSError):
        return "unknown"


def lease_error(attempt: ExpiredAttempt) -> LeaseExpired:
    """Return the error recorded for a running attempt whose lease lapsed."""
    deadline = _iso(attempt.deadline_ms)
    return LeaseExpired(
        f"Worker {_worker_of(attempt)} stopped renewing its lease; deadline {deadline}. "
        "The worker process died, hung, or lost Redis while running this attempt. Check that "
        "worker's logs; raise OPTIONS['lease_ttl'] if workers are often paused that long."
    )


def _expired_result(backend: "ThreadmillTaskBackend", attempt: ExpiredAttempt) -> TaskResult | None:
    """Return the TaskResult of ``attempt`` as it stood while running; None if unloadable.

    A task that cannot be loaded any more (corrupt payload, removed or broken code, a queue
    no longer in QUEUES) is failed without one: one bad record must never stall every later
    reap pass.
    """
    task_id = attempt.lease.task_id
    try:
        payload = decode_payload(attempt.payload)
        task = load_task(
            payload["path"], backend=backend.alias, queue=attempt.lease.queue, payload=payload
        )
        return task_result(
            task,
            task_id,
            status=TaskResultStatus.RUNNING,
            args=payload.get("args", []),
            kwargs=payload.get("kwargs", {}),
            backend=task.backend,
            errors=[parse_error(raw) for raw in attempt.errors],
            worker_ids=list(attempt.workers),
            decoded=True,  # read from the payload's JSON: normalised already
        )
    except Exception as exc:  # PayloadError, InvalidTask, or whatever the task module raises
        logger.warning("Expired task cannot be loaded task_id=%s problem=%r", task_id, exc)
        return None


def _worker_of(attempt: ExpiredAttempt) -> str:
    return attempt.workers[-1] if attempt.workers else "<unknown>"


def _finish_for(
    backend: "ThreadmillTaskBackend", attempt: ExpiredAttempt
) -> tuple[Finish, TaskResult | None]:
    """Return the fenced outcome of ``attempt`` (FAILED with the lease error, or a retry the
    task's policy gives it, unless it is a step its workflow cancelled, as a worker decides
    a failed attempt's) and its TaskResult."""
    result = _expired_result(backend, attempt)
    finish = outcome.failed(attempt.lease, lease_error(attempt), 0, result)
    return CancelledSteps(backend.broker).retry_checked(finish, attempt), result


def _count(counts: QueueReap, finish: Finish) -> None:
    if finish.outcome is Outcome.RETRY:
        counts.retried += 1
    else:
        counts.failed += 1


def _settle(
    backend: "ThreadmillTaskBackend",
    queue: str,
    attempts: list[ExpiredAttempt],
    counts: QueueReap,
    mark: str = "",
) -> None:
    """Record each expired attempt of ``queue`` as FAILED or retried, fenced by its token.

    The call leaves ``mark`` (a new one unless given) on what it records. A call that raised
    may have recorded them (its reply lost), and their leases are gone: they are kept with
    the mark for the next pass, which settles them first under it. An attempt answered
    "already" then is one this call recorded: settled here, and counted once.
    """
    settled = [_finish_for(backend, attempt) for attempt in attempts]
    if not settled:
        return
    mark = mark or reap_mark()
    tally = backend.broker.tally
    try:
        rejected = backend.broker.finish("", [f for f, _ in settled], mark=mark)
    except BrokerUnavailable:
        tally.settle_later(queue, mark, attempts)
        raise
    tally.settled(queue, mark)
    stale = {finish.lease.task_id for finish, ack in rejected if ack is not Ack.ALREADY}
    failed: list[tuple[Finish, TaskResult]] = []
    for attempt, (finish, result) in zip(attempts, settled, strict=True):
        task_id = attempt.lease.task_id
        if task_id in stale:
            counts.stale += 1
            logger.debug("Expired lease settled elsewhere first task_id=%s", task_id)
            continue
        _count(counts, finish)
        if finish.outcome is Outcome.RETRY:
            logger.warning(
                "Lease expired, retrying task_id=%s worker=%s delay_ms=%d",
                task_id,
                _worker_of(attempt),
                finish.retry_delay_ms,
            )
            continue
        logger.error(
            "Lease expired, task FAILED task_id=%s worker=%s", task_id, _worker_of(attempt)
        )
        if result is not None:
            failed.append((finish, result))
    _announce_failed(backend, failed)


def _announce_failed(
    backend: "ThreadmillTaskBackend", failed: list[tuple[Finish, TaskResult]]
) -> None:
    """Send task_finished for the attempts a pass failed, as a worker sends it; the pass's
    log line said it already.

    Each result is read back as stored, in one round trip: the reap reply carries neither
    the task's enqueue nor its start time, and a receiver that times the attempt
    (``finished_at - started_at``) needs both. Should that read fail, the results built from
    the reply are sent: the attempts are settled, and would never be announced again.
    """
    if not failed or not heard(task_finished, TaskResultStatus.FAILED):
        return
    try:
        stored = backend.pipeline.get_results([result.id for _, result in failed])
    except BrokerUnavailable as exc:
        logger.warning("Failed leases not read back, sent as reaped error=%s", exc)
        stored = [None] * len(failed)
    with said_already():
        for (finish, built), found in zip(failed, stored, strict=True):
            outcome.announce(type(backend), outcome.Built(found or built), finish)


def _dry_run(
    backend: "ThreadmillTaskBackend", queue: str, reaped: Reaped, counts: QueueReap
) -> list[str]:
    """Count and describe what a real pass would do with ``reaped``, changing nothing."""
    lines = [f"queue={queue} task_id={task_id} action=release" for task_id in reaped.released]
    for attempt in reaped.expired:
        finish, _ = _finish_for(backend, attempt)
        _count(counts, finish)
        action = "fail"
        if finish.outcome is Outcome.RETRY:
            action = f"retry delay_ms={finish.retry_delay_ms}"
        lines.append(
            f"queue={queue} task_id={attempt.lease.task_id} action={action} "
            f"worker={_worker_of(attempt)} deadline={_iso(attempt.deadline_ms)}"
        )
    return lines


def _counted(
    backend: "ThreadmillTaskBackend", report: ReapReport, queue: str, reaped: Reaped
) -> None:
    """Count what the reap call of ``queue`` did itself (and a dry run's lines): it is done
    before anything is settled, and stands if the pass stops afterwards."""
    counts = report.queues[queue]
    counts.released += len(reaped.released)
    counts.set_aside += reaped.set_aside
    if report.dry_run:
        report.lines += _dry_run(backend, queue, reaped, counts)


def _settle_batch(
    backend: "ThreadmillTaskBackend", queue: str, reaped: Reaped, counts: QueueReap, size: int
) -> bool:
    """Settle the expired attempts of one batch of ``queue``; return True when it was the
    queue's last batch of the pass.

    Counted from every entry looked at: a batch holding ghosts or damaged records releases
    fewer than it looked at, yet more may wait behind it. A batch whose every entry was an
    attempt left unsettled is not asked for again: it would come back the same, and the pass
    would hold the supervisor's main thread (docs/lifecycle.md, When a worker dies: leases
    and the reaper).
    """
    stale_before = counts.stale
    _settle(backend, queue, reaped.expired, counts)
    moved = reaped.looked_at - (counts.stale - stale_before)
    return (reaped.looked_at < size and not reaped.cut_short) or moved == 0


def _skip(
    backend: "ThreadmillTaskBackend",
    report: ReapReport,
    failed: dict[str, BrokerUnavailable],
    waiting: Sequence[str] = (),
) -> None:
    """Note the ``failed`` queues in ``report.failures`` while Redis still answers; raise when
    Redis itself is the problem, the ``waiting`` queues noted as failed too.

    A key of another type in one queue (docs/lifecycle.md, Keys of another type) fails every
    pass there; raised at once, it kept the queues after it from being reaped, their dead
    workers' tasks held, until someone deleted the key. A Redis that does not answer fails
    every queue alike, each after its own timeout: that is raised at once.
    """
    if not failed:
        return
    for queue, error in failed.items():
        report.failures.setdefault(queue, error)
    try:
        backend.broker.server_time_ms()
    except BrokerUnavailable as gone:
        for queue in waiting:
            report.failures.setdefault(queue, gone)
        raise
    for queue, error in failed.items():
        logger.warning("Reap of a queue failed, the others go on queue=%s error=%s", queue, error)


def _settled_again(backend: "ThreadmillTaskBackend", queue: str, report: ReapReport) -> bool:
    """Settle first the attempts of ``queue`` a finish call of an earlier pass left unsure;
    return False when that failed: the queue's part of the pass ends there."""
    counts = report.queues.setdefault(queue, QueueReap())
    if report.dry_run:
        return True
    try:
        for mark, attempts in backend.broker.tally.to_settle_again(queue):
            _settle(backend, queue, attempts, counts, mark)
    except BrokerUnavailable as exc:
        _skip(backend, report, {queue: exc})
        return False
    return True


def _reap_round(
    backend: "ThreadmillTaskBackend",
    queues: list[str],
    report: ReapReport,
    size: int,
    parts: PassParts,
) -> list[str]:
    """Reap one batch of each of ``queues`` in one round trip, settle them, and send their
    outcomes with the done index of the queues that are done trimmed, in a second, with that
    of their other counts' parts (``Broker.other_parts``), those ``parts`` leaves out aside;
    return the queues with more to reap.

    Each round's outcomes go out as it ends: sent once after the pass, 100,000 ids held Redis
    a third of a second in one script call, and a pass cut short by a stop sent none
    (docs/observability.md, What it costs). The queues of a round share its round trips,
    not its failures: one queue's error is that queue's (``_skip``).
    """
    try:
        reaping = {queue: parts.reaped[queue] for queue in queues}
        replies = backend.broker.reap_each(reaping, size, dry_run=report.dry_run)
    except BrokerUnavailable as exc:
        _skip(backend, report, dict.fromkeys(queues, exc))
        return []
    failed: dict[str, BrokerUnavailable] = {}
    taken: dict[str, Reaped] = {}
    for queue, reply in zip(queues, replies, strict=True):
        if isinstance(reply, BrokerUnavailable):
            failed[queue] = reply
        else:
            taken[queue] = reply
            _counted(backend, report, queue, reply)
    _skip(backend, report, failed, waiting=list(taken))
    if report.dry_run:  # a second call would return the same batch
        return []
    ended: list[str] = []
    more: list[str] = []
    for queue, batch in taken.items():
        try:
            last = _settle_batch(backend, queue, batch, report.queues[queue], size)
        except BrokerUnavailable as exc:  # Redis gone: no queue of the round had its send
            _skip(backend, report, {queue: exc}, waiting=list(taken))
            continue
        (ended if last else more).append(queue)
    left = _sent(backend, report, ended, [*ended, *more], parts)
    _trim_done(backend, report, left, parts)
    return [queue for queue in more if queue not in report.failures]


def _sent(
    backend: "ThreadmillTaskBackend",
    report: ReapReport,
    trimming: list[str],
    sending: list[str],
    parts: PassParts,
) -> list[str]:
    """Send the tallied outcomes with ``trimming``'s done indexes trimmed, those of their
    other counts' parts too (no worker sends there once those of an earlier ``queue_shards``
    stop: docs/scaling.md, Changing the shard count), none of the parts ``parts`` leaves out;
    return the queues whose index still holds expired ids. A whole send that failed fails
    ``sending``'s part."""
    other = {queue: parts.other[queue] for queue in trimming}
    try:
        left, failed = backend.broker.send_metrics_each(trimming=other, leaving_out=parts.down)
    except BrokerUnavailable as exc:
        left, failed = [], dict.fromkeys(sending, exc)
    _skip(backend, report, failed)
    return left


def _trim_done(
    backend: "ThreadmillTaskBackend",
    report: ReapReport,
    left: list[str],
    parts: PassParts,
) -> None:
    """Trim the done index of the ``left`` queues again, all in one round trip, while the
    last call left expired ids in one, up to TRIM_CALLS_PER_PASS calls counting the round's
    send: one call per pass took 17 hours to clear a million ids an idle queue kept
    (docs/observability.md, Metrics and the done index)."""
    for _ in range(TRIM_CALLS_PER_PASS - 1):
        if not left:
            return
        left = _sent(backend, report, left, left, parts)


def _never() -> bool:
    return False


def _skipped(report: ReapReport, parts: PassParts) -> None:
    """Note the queues ``parts`` skips whole (every configured part on a Redis Cluster
    primary that did not answer) in ``report.failures``, nothing done, with one WARNING per
    node naming them and the parts of the other queues it holds (a sharded queue's shard, a
    part of another shard count): the pass reaps and drains the others where still served.

    Their leases and outboxes there wait for the node; its return starts a hold
    (broker/server_identity.py), so the renewals their workers could not send come first.
    """
    for queue, error in parts.skipped.items():
        report.queues[queue] = QueueReap()
        report.failures[queue] = error
    for error, left in parts.left_by_node().items():
        logger.warning(
            "Reap skipped the queues of a node that did not answer, the others go on "
            "queues=%s error=%s",
            ",".join(left),
            error,
        )


def _drained(backend: "ThreadmillTaskBackend", parts: PassParts) -> int:
    """Drain the workflow outboxes the pass reaches (``PassParts.drained``); return how many
    workflows advanced. An outbox a Redis Cluster node that stopped answering since the pass
    began kept from being read is named, one line per node, and the others are drained."""
    found, unread = backend.broker.outboxes_read(parts.drained())
    by_node: dict[BrokerUnavailable, list[str]] = {}  # one error per node
    for part, error in unread.items():
        by_node.setdefault(error, []).append(part)
    for error, left in by_node.items():
        logger.warning(
            "Reap left the workflow outboxes of a node that did not answer, the others are "
            "drained parts=%s error=%s",
            ",".join(left),
            error,
        )
    return drain_parts(backend, found)


def _reached(
    backend: "ThreadmillTaskBackend",
    report: ReapReport,
    names: QueueNames,
    settles: Callable[[ServerSeen], bool] | None,
) -> tuple[PassParts, bool]:
    """Return the queue parts a pass reaches, and whether it settles leases: with
    ``settles``, those on a Redis Cluster primary that did not answer are left out, and named
    (``_skipped``); a sharded queue with a shard still served is reaped there."""
    broker = backend.broker
    if settles is None:
        return pass_parts(broker, names.queues, names.other, {}), True
    every = [part for queue in names.queues for part in (*broker.parts(queue), *names.other[queue])]
    server = broker.server_seen(every)
    parts = pass_parts(broker, names.queues, names.other, server.unreached)
    _skipped(report, parts)
    return parts, settles(server)


def reap_once(
    backend: "ThreadmillTaskBackend",
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    stopped: Callable[[], bool] = _never,
) -> ReapReport:
    """Settle every expired lease on every queue of ``backend``; return what was done.

    With ``dry_run``, change nothing and report what would be done (up to ``batch_size``
    leases per queue). Raises ``BrokerUnavailable``: at once when Redis does not answer; when
    one queue failed, after the others are reaped (``reap_pass`` returns the report instead).
    ``stopped`` ends the pass between two rounds, as in ``reap_pass``.
    """
    report = reap_pass(backend, batch_size=batch_size, dry_run=dry_run, stopped=stopped)
    if report.unreachable:  # the pass failed: the supervisor says so, and retries
        raise report.unreachable
    if report.failures:
        raise next(iter(report.failures.values()))
    return report


def reap_pass(
    backend: "ThreadmillTaskBackend",
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    stopped: Callable[[], bool] = _never,
    settles: Callable[[ServerSeen], bool] | None = None,
) -> ReapReport:
    """``reap_once``, but a queue whose part failed is noted in the report's ``failures``, and
    Redis going away part-way in its ``unreachable``, not raised: what the pass settled before
    is still reported. Raises ``BrokerUnavailable`` when Redis does not answer at the start.

    ``stopped`` is asked before each round: once it holds, the pass ends there, the queues
    with more to reap in the report's ``stopped`` (a backlog of 100,000 expired leases is 200
    rounds; docs/lifecycle.md, ``manage.py threadmill_reap``). With ``settles``, the pass
    first reads the server (``Broker.server_seen``): it leaves out the queue parts of a Redis
    Cluster primary that did not answer (``_reached``), and settles leases only if
    ``settles``, told what was read, says so; else it only advances workflows: a loop's
    ``ReapHold`` so gives live workers the time to renew leases an outage or a stall let
    lapse (docs/lifecycle.md, After an outage or a stall). A Redis Cluster whose node of the
    queue set does not answer has the pass go through the configured queues
    (``QueueNames.unknown``)."""
    checked_batch_size(batch_size, f"reap_once(batch_size={batch_size!r})")
    report = ReapReport(dry_run=dry_run)
    names = backend.broker.queue_names(backend.queues, every_count=True)
    if names.unknown is not None:
        report.unknown = names.unknown
        logger.warning(
            "Reap goes through the queues in QUEUES alone, those registered only in Redis "
            "unknown queues=%s error=%s",
            ",".join(names.queues) or "none",
            names.unknown,
        )
    parts, settle = _reached(backend, report, names, settles)
    queues = list(parts.reaped)
    try:
        # One round trip reaps a batch of every queue part, another sends their outcomes
        # (docs/scaling.md, What idle workers cost); queues with more go round again.
        reaped = queues if settle else []
        pending = [queue for queue in reaped if _settled_again(backend, queue, report)]
        while pending and not stopped():
            pending = _reap_round(backend, pending, report, batch_size, parts)
        report.stopped = pending
    except BrokerUnavailable as exc:  # Redis itself: the queues not reaped wait
        report.unreachable = exc
    for queue, error in parts.partly.items():  # leases left on the node: its part not reaped
        report.queues.setdefault(queue, QueueReap())
        report.failures.setdefault(queue, error)
    if not dry_run and report.unreachable is None and not report.stopped:
        # Workflows advance from steps whose drainer died, or that the reaper just settled,
        # under any shard count (docs/scaling.md, Changing the shard count).
        try:
            report.advanced = _drained(backend, parts)
        except BrokerUnavailable as exc:  # every queue was reaped: the entries left wait
            report.unreachable = exc
    if report.released or report.failed or report.retried or report.set_aside or report.advanced:
        logger.info(
            "Reap pass dry_run=%s released=%d failed=%d retried=%d stale=%d set_aside=%d "
            "workflow_steps_advanced=%d",
            dry_run,
            report.released,
            report.failed,
            report.retried,
            report.stale,
            report.set_aside,
            report.advanced,
        )
    return report
