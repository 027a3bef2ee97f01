"""What the reaper records for an expired lease's attempt (worker/reaper.py runs the pass).

An expired *running* attempt is settled through the fenced finish script with the attempt's own
token, as FAILED with a ``LeaseExpired`` error or as a retry when the task's policy says so
(docs/design.md, Reserved is not running), but never as a retry for a workflow step whose
workflow was cancelled (worker/cancelled_steps.py). Several reapers and a late ack may race:
the token check lets exactly one of them record the attempt's outcome. A dry run describes the
same outcomes, recording none.
"""

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..broker import Ack, ExpiredAttempt, Finish, Outcome, Reaped, reap_mark
from ..broker.metrics import Settling
from ..codec.payloads import decode_payload, load_task
from ..codec.results import parse_error, task_result
from ..codec.times import from_ms
from ..compat import TaskResult, TaskResultStatus, task_finished
from ..exceptions import BrokerUnavailable, LeaseExpired
from ..observability.signals import heard, said_already
from . import outcome
from .cancelled_steps import CancelledSteps
from .reap_report import QueueReap, ReapReport

if TYPE_CHECKING:
    from ..backend import ThreadmillTaskBackend

# What a pass settles logs as the reaper (docs/observability.md, Logging).
logger = logging.getLogger("django_threadmill.worker.reaper")


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
    """Return the TaskResult of ``attempt`` as it stood while running, its times included (a
    retry policy may time its retries from them, as it does on a worker); None if unloadable.

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
            enqueued_at=from_ms(attempt.enqueued_ms),
            started_at=from_ms(attempt.started_ms),
            last_attempted_at=from_ms(attempt.attempted_ms or attempt.started_ms),
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


def settle(
    backend: "ThreadmillTaskBackend",
    queue: str,
    attempts: list[Settling],
    counts: QueueReap,
    mark: str = "",
) -> None:
    """Record each decided expired attempt of ``queue`` as FAILED or retried, fenced by its
    token.

    The call leaves ``mark`` (a new one unless given) on what it records. A call that raised
    may have recorded them (its reply lost), and their leases are gone: they are kept, as
    decided, with the mark for the next pass, which settles them first under it. An attempt
    answered "already" then is one this call recorded: settled here, counted and announced
    once, as it was decided (asked again, a retry policy may answer otherwise).
    """
    if not attempts:
        return
    mark = mark or reap_mark()
    tally = backend.broker.tally
    try:
        rejected = backend.broker.finish("", [settling.finish for settling in attempts], mark=mark)
    except BrokerUnavailable:
        tally.settle_later(queue, mark, attempts)
        raise
    tally.settled(queue, mark)
    stale = {finish.lease.task_id for finish, ack in rejected if ack is not Ack.ALREADY}
    failed: list[tuple[Finish, TaskResult]] = []
    for attempt, finish, result in attempts:
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
    log line said it already. Each result was built from the reap reply, which carries the
    task's enqueue and start times: a receiver that times the attempt (``finished_at -
    started_at``) needs both."""
    if not failed or not heard(task_finished, TaskResultStatus.FAILED):
        return
    with said_already():
        for finish, result in failed:
            outcome.announce(type(backend), outcome.Built(result), finish)


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


def counted(
    backend: "ThreadmillTaskBackend", report: ReapReport, queue: str, reaped: Reaped
) -> None:
    """Count what the reap call of ``queue`` did itself (and a dry run's lines): it is done
    before anything is settled, and stands if the pass stops afterwards."""
    counts = report.queues[queue]
    counts.released += len(reaped.released)
    counts.set_aside += reaped.set_aside
    if report.dry_run:
        report.lines += _dry_run(backend, queue, reaped, counts)


def settle_batch(
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
    decided = [Settling(attempt, *_finish_for(backend, attempt)) for attempt in reaped.expired]
    settle(backend, queue, decided, counts)
    moved = reaped.looked_at - (counts.stale - stale_before)
    return (reaped.looked_at < size and not reaped.cut_short) or moved == 0
