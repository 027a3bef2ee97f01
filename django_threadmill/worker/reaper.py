"""The lease reaper's pass: settle every lease whose worker went silent, on every queue of a
backend, then drain every queue's workflow outbox (workflows/advance.py).

An expired *reservation* (prefetched, never started) goes back to READY in its place; the
broker's reap script does that. An expired *running* attempt is settled as worker/reap_settle.py
says. A pass goes in rounds, each one round trip for a batch of every queue and another for their
outcomes; one queue's failure is that queue's, and a Redis Cluster primary that does not answer
has its queue parts left out (worker/reap_parts.py), as has a shard whose reap call failed.
"""

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..broker import Reaped, checked_batch_size
from ..broker.down_nodes import by_node
from ..broker.layouts import QueueNames
from ..broker.server_identity import ServerSeen
from ..exceptions import BrokerUnavailable
from ..wording import listed_values
from ..workflows.advance import drain_parts
from .reap_parts import PassParts, pass_parts
from .reap_report import QueueReap, ReapReport, failed_with
from .reap_settle import counted, settle, settle_batch

if TYPE_CHECKING:
    from ..backend import ThreadmillTaskBackend

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500  # expired leases looked at per reap script call
# Most metrics.lua calls a pass makes to trim one queue's done index (calls): each removes at
# most 1,000 expired ids, about a millisecond of Redis, so a pass clears 100,000 an idle queue
# kept (docs/observability.md, Metrics and the done index).
TRIM_CALLS_PER_PASS = 100


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


def _left_out(parts: PassParts, queue: str, reaped: Reaped) -> None:
    """Leave the parts of ``queue`` whose reap call failed (a key of another type in one shard:
    docs/lifecycle.md, Keys of another type) out of the rest of the pass, each named once: the
    queue's other parts go on. Their error failed the whole queue before, and the expired
    running attempts the other parts' calls reported were dropped, unsettled, every pass."""
    if not reaped.failed_parts:
        return
    for part, error in reaped.failed_parts.items():
        logger.warning(
            "Reap of a queue part failed, its other parts go on queue=%s part=%s error=%s",
            queue,
            part,
            error,
        )
    parts.leave_out(queue, reaped.failed_parts)


def _settled_again(backend: "ThreadmillTaskBackend", queue: str, report: ReapReport) -> bool:
    """Settle first the attempts of ``queue`` a finish call of an earlier pass left unsure;
    return False when that failed: the queue's part of the pass ends there."""
    counts = report.queues.setdefault(queue, QueueReap())
    if report.dry_run:
        return True
    try:
        for mark, attempts in backend.broker.tally.to_settle_again(queue):
            settle(backend, queue, attempts, counts, mark)
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
            counted(backend, report, queue, reply)
            _left_out(parts, queue, reply)
    _skip(backend, report, failed, waiting=list(taken))
    if report.dry_run:  # a second call would return the same batch
        return []
    ended: list[str] = []
    more: list[str] = []
    for queue, batch in taken.items():
        try:
            last = settle_batch(backend, queue, batch, report.queues[queue], size)
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
            listed_values(left),
            error,
        )


def _drained(backend: "ThreadmillTaskBackend", parts: PassParts) -> int:
    """Drain the workflow outboxes the pass reaches (``PassParts.drained``); return how many
    workflows advanced. An outbox a Redis Cluster node that stopped answering since the pass
    began kept from being read is named, one line per node, and the others are drained."""
    found, unread = backend.broker.outboxes_read(parts.drained())
    for error, left in by_node(unread).items():
        logger.warning(
            "Reap left the workflow outboxes of a node that did not answer, the others are "
            "drained parts=%s error=%s",
            listed_values(left),
            error,
        )
    return drain_parts(backend, found)


def _advance(backend: "ThreadmillTaskBackend", report: ReapReport, parts: PassParts) -> None:
    """Drain the workflow outboxes once the queues are reaped, noting how many workflows
    advanced in ``report``, or why that failed: Redis gone (asked as ``_skip`` asks) in
    ``unreachable``, any other error while it answers in ``advance_failed`` (its scripts lost
    again just after they were loaded, an ACL rule). That one read as Redis gone, and held a
    reaping loop's next pass as after an outage (worker/reap_hold.py), every pass it lasted."""
    try:
        report.advanced = _drained(backend, parts)
    except BrokerUnavailable as failed:  # the entries left wait for the next pass
        try:
            backend.broker.server_time_ms()
        except BrokerUnavailable as gone:
            report.unreachable = gone
            return
        report.advance_failed = failed


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
    one queue failed, after the others are reaped, or advancing workflows did after them
    (``reap_pass`` returns the report instead).
    ``stopped`` ends the pass between two rounds, as in ``reap_pass``.
    """
    report = reap_pass(backend, batch_size=batch_size, dry_run=dry_run, stopped=stopped)
    if failed := failed_with(report):
        raise failed
    return report


def reap_pass(
    backend: "ThreadmillTaskBackend",
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    stopped: Callable[[], bool] = _never,
    settles: Callable[[ServerSeen], bool] | None = None,
) -> ReapReport:
    """``reap_once``, but a queue whose part failed is noted in the report's ``failures``,
    Redis going away part-way in its ``unreachable``, and advancing workflows failing after
    in its ``advance_failed``, not raised: what the pass settled before is still reported.
    Raises ``BrokerUnavailable`` when Redis does not answer at the start.

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
            listed_values(names.queues) or "none",
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
    for queue, error in parts.partly.items():  # leases left in a part left out: incomplete
        report.queues.setdefault(queue, QueueReap())
        if queue not in report.failures:  # else it failed whole later in the pass
            report.failures[queue] = error
            report.partly.append(queue)
    if not dry_run and report.unreachable is None and not report.stopped:
        # Workflows advance from steps whose drainer died, or that the reaper just settled,
        # under any shard count (docs/scaling.md, Changing the shard count).
        _advance(backend, report, parts)
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
