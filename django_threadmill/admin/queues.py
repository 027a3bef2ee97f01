"""The queues page: per alias and queue, what waits, what runs, what finished, and who works;
and pausing or resuming a queue from it."""

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from ..aliases import sources
from ..broker.damaged import DamagedRecord
from ..broker.inspect import (
    BAND_SAMPLE,
    STATE_SAMPLE,
    THROUGHPUT_MINUTES,
    QueueOverview,
    WorkerSighting,
)
from ..broker.inspect.source import Source
from ..broker.pausing import MAX_REASON_CHARS, QueuePause, checked_reason
from ..broker.raw_replies import controls_escaped
from ..codec.ids import queue_of, worker_host_and_pid
from ..conf.limits import QueueLimit
from ..conf.topology import masked_location
from ..exceptions import BrokerUnavailable, ResumedNotWoken
from ..wording import command_line
from .activity import REFRESH_S, activity_context
from .audit import admin_user
from .display import age, queues_unread, when
from .results import task_page_url


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerLine:
    """One worker process across the queues of an alias."""

    worker_id: str
    host: str
    pid: str
    held: int
    threads: int  # live worker threads (the pool floats between --threads and --max-threads)
    queues: list[str]
    last_renewal_ms: int
    silent: bool  # no renewal for longer than a lease: it is probably gone


def _worker_lines(sightings: list[WorkerSighting], now_ms: int, lease_ms: int) -> list[WorkerLine]:
    merged: dict[str, list[WorkerSighting]] = {}
    for sighting in sightings:
        merged.setdefault(sighting.worker_id, []).append(sighting)
    lines = []
    for worker_id, seen in merged.items():
        host, pid = worker_host_and_pid(worker_id)
        last = max(s.last_renewal_ms for s in seen)
        lines.append(
            WorkerLine(
                worker_id=worker_id,
                host=host,
                pid=pid,
                held=sum(s.held for s in seen),
                threads=max(s.threads for s in seen),
                queues=sorted(s.queue for s in seen),
                last_renewal_ms=last,
                silent=not any(s.live(now_ms, lease_ms) for s in seen),
            )
        )
    return lines


def _limit_line(overview: QueueOverview, limit: QueueLimit, next_token_ms: int | None) -> str:
    """Describe a queue's limits and how full they are, e.g. "2 of 2 slots held · 600/m".

    Slots are the queue's leases, counted as the acquire script counts them (summed from the
    reserved/running split, they were an estimate above STATE_SAMPLE leases). Those a lapsed
    lease holds (its worker died) are said to wait for a reap: shown as held by running tasks,
    they kept the queue still up to the reap interval after they lapsed, and for good where
    no reaper runs, with nothing on the page saying why."""
    parts = []
    if limit.concurrency is not None:
        parts.append(f"{overview.held} of {limit.concurrency} slots held{_lapsed(overview.lapsed)}")
    if limit.token_interval_us is not None:
        wait_ms = _next_start_in_ms(overview.now_ms, next_token_ms, limit.token_interval_us)
        parts.append(f"{limit.rate}, next start " + (f"in {wait_ms} ms" if wait_ms else "now"))
    return " · ".join(parts)


def _lapsed(count: int) -> str:
    """Say how many slots lapsed leases hold, e.g. " (1 by a lapsed lease: …)"; "" for none."""
    if not count:
        return ""
    if count == 1:
        return " (1 by a lapsed lease: the next reap frees it)"
    return f" ({count} by lapsed leases: the next reap frees them)"


def _next_start_in_ms(now_ms: int, next_token_ms: int | None, interval_us: int) -> int:
    """Return the ms until a rate-limited queue's next start, at most one interval of its rate:
    a time a slower rate stored (before a deploy raised it) is brought to one interval on when
    a worker next asks (common.lua, next_token_us); shown as stored, "1/h" raised to "100/s"
    said the next start was up to an hour away."""
    return min(max(0, (next_token_ms or 0) - now_ms), -(-interval_us // 1000))


@dataclass(frozen=True, slots=True, kw_only=True)
class DonePerMinute:
    """One Done/min cell: the rate over a window, or None and why there is none."""

    rate: float | None
    why_none: str = ""


def _done_per_minute(overview: QueueOverview, result_ttl_s: float | None) -> list[DonePerMinute]:
    """Return the Done/min cells of a queue, one per window of ``THROUGHPUT_MINUTES``.

    They count the results index, which keeps a result for ``result_ttl``: a longer window
    would be divided by minutes whose results are gone, and read too low.
    """
    cells = []
    for minutes in THROUGHPUT_MINUTES:
        if result_ttl_s is not None and result_ttl_s < minutes * 60:
            why = f"Results are kept {result_ttl_s:g} s (result_ttl): too short to count "
            cells.append(DonePerMinute(rate=None, why_none=f"{why}{minutes} minutes."))
        else:
            cells.append(DonePerMinute(rate=overview.finished_since[minutes] / minutes))
    return cells


def _queue_line(
    overview: QueueOverview,
    limit: QueueLimit,
    next_token_ms: int | None,
    pause: QueuePause | None,
    result_ttl_s: float | None,
) -> dict[str, Any]:
    return {
        "overview": overview,
        "paused": pause is not None,
        "paused_title": _paused_title(overview.now_ms, pause),
        "limits": _limit_line(overview, limit, next_token_ms),
        "reserved": overview.leased.counts.get("reserved", 0),
        "running": overview.leased.counts.get("running", 0),
        "successful": overview.outcomes.counts.get("successful", 0),
        "failed": overview.outcomes.counts.get("failed", 0),
        "per_minute": _done_per_minute(overview, result_ttl_s),
        "lifetime_title": "All time in this queue: {} successful, {} failed, {} retried.".format(
            *(overview.lifetime.get(name, 0) for name in ("successful", "failed", "retry"))
        ),
        "oldest_ready_age": age(overview.now_ms, overview.oldest_ready_since_ms),
        "oldest_ready_at": when(overview.oldest_ready_since_ms),
    }


def _paused_title(now_ms: int, pause: QueuePause | None) -> str:
    """Describe a pause for the queue's badge, e.g. "Paused 5 min ago by ada in the admin",
    its control characters (a terminal's escape typed in a reason) shown as the commands show
    them, ``\\x1b``: HTML escaping leaves them as they are."""
    if pause is None:
        return ""
    since = f" {age(now_ms, pause.at_ms)} ago" if pause.at_ms is not None else ""
    by = f" by {controls_escaped(pause.by)}" if pause.by else ""
    why = f": {controls_escaped(pause.reason)}" if pause.reason else ""
    return f"Paused{since}{by}{why}. Workers take none of its tasks until it is resumed."


def _last_renewal(line: WorkerLine, now_ms: int) -> str:
    """Say when the worker last renewed, e.g. "4 s ago"; a renewal dated more than a lease
    ahead of the Redis clock was made before it stepped back, and is said so, not "0 s ago"
    (docs/deploy.md, Health)."""
    if line.silent and line.last_renewal_ms > now_ms:
        return (
            f"{age(line.last_renewal_ms, now_ms)} ahead of the Redis clock, which stepped back "
            "since (NTP, a failover): probably stopped, a live worker renews on the new clock"
        )
    silent = " (silent longer than a lease: probably stopped)" if line.silent else ""
    return f"{age(now_ms, line.last_renewal_ms)} ago{silent}"


def _damaged_line(alias: str, record: DamagedRecord) -> dict[str, Any]:
    """Return one line of the damaged records table; a task id links to its detail page."""
    # Else a guard key ("u:<digest>", "fired:<name>"), or an id that names no record.
    is_task = queue_of(record.id) is not None
    return {
        "record": record,
        "at": when(record.at_ms),
        "url": task_page_url(alias, record.id) if is_task else "",
    }


def alias_context(source: Source) -> dict[str, Any]:
    """Return the queues-page block of one alias; a Redis error is shown, not raised."""
    settings = source.settings
    block: dict[str, Any] = {
        "alias": source.alias,
        "location": masked_location(settings.location),
        "key_prefix": settings.key_prefix,
        "result_ttl_s": settings.result_ttl_s,
    }
    try:
        names = source.names
        queues = names.served
        # Every shard count's: what an earlier queue_shards left is still shown (docs/scaling.md,
        # Changing the shard count).
        overviews = source.inspector.overview(queues, every_count=True)
        sightings = source.inspector.workers(queues, every_count=True)
        tokens = source.inspector.next_tokens_ms([q for q in queues if settings.limit_of(q).rate])
        paused = source.inspector.paused(queues)
        # Every count's parts, read once per page view for the counts above and these alike.
        damaged = source.broker.damaged(
            queues, source.inspector.parts_to_sum(queues, every_count=True)
        )
        now_ms = overviews[0].now_ms if overviews else source.inspector.now_ms()
        activity = activity_context(source, queues, now_ms)
    except BrokerUnavailable as exc:
        return {**block, "error": str(exc)}
    workers = _worker_lines(sightings, now_ms, settings.lease_ttl_ms)
    lines = {
        overview.queue: _queue_line(
            overview,
            settings.limit_of(overview.queue),
            tokens.get(overview.queue),
            paused.get(overview.queue),
            settings.result_ttl_s,
        )
        for overview in overviews
    }
    return {
        **block,
        "queues_alone": queues_unread(names),
        # A queue of a node that does not answer is listed as such, not as empty.
        "queues": [lines.get(queue) or {"unreached": queue} for queue in names.queues],
        "workers": [
            {"line": line, "last_renewal": _last_renewal(line, now_ms)}
            for line in sorted(workers, key=lambda w: (w.silent, w.worker_id))
        ],
        "damaged": [_damaged_line(source.alias, record) for record in damaged],
        "forget_damaged": command_line(source.alias, "threadmill_queue forget-damaged QUEUE ID"),
        "now": when(now_ms),
        "activity": activity,
        "throughput_minutes": THROUGHPUT_MINUTES,
    }


def queues_context() -> dict[str, Any]:
    """Return the template context of the queues page: one block per ThreadmillTaskBackend."""
    return {
        "backends": [alias_context(source) for source in sources()],
        "sample": STATE_SAMPLE,
        "band_sample": BAND_SAMPLE,
        "refresh_s": REFRESH_S,
    }


def reason_error(reason: str) -> str:
    """Return why the command would refuse a pause's ``reason``, or "" if it would take it: one
    check for both (docs/lifecycle.md, Pausing a queue)."""
    try:
        checked_reason(reason, "The reason")
    except ValueError as exc:
        return str(exc)
    return ""


def pause_confirmation(
    source: Source, queue: str, *, resume: bool, reason: str = "", error: str = ""
) -> dict[str, Any]:
    """Return what the pause (or resume) confirmation page shows: the queue's state now, and
    the ``reason`` typed with the ``error`` that refused it."""
    ready, delayed = source.inspector.waiting([queue])[queue]
    pause = source.inspector.paused([queue]).get(queue)
    return {
        "alias": source.alias,
        "queue": queue,
        "resume": resume,
        "ready": ready,
        "delayed": delayed,
        "paused_title": _paused_title(source.inspector.now_ms(), pause),
        "max_reason_chars": MAX_REASON_CHARS,
        "reason": reason,
        "reason_error": error,
    }


def pause_or_resume(
    source: Source,
    queue: str,
    user: AbstractBaseUser | AnonymousUser,
    *,
    resume: bool,
    reason: str = "",
) -> tuple[str, int]:
    """Pause or resume ``queue`` for ``user`` (the broker logs who); return the message and
    its level. ``reason`` is one ``reason_error`` passed."""
    by = admin_user(user)
    where = f"{source.alias} / {queue}"
    if resume:
        try:
            resumed = source.broker.resume(queue, by)
        except ResumedNotWoken as exc:  # resumed all the same: say so, and what to fix
            return str(exc), messages.ERROR
        if resumed:
            return f"Resumed {where}: idle workers were woken to take its tasks.", messages.SUCCESS
        return f"{where} was not paused; nothing changed.", messages.WARNING
    if source.broker.pause(queue, by, reason):
        return (
            f"Paused {where}: workers take none of its tasks until it is resumed.",
            messages.SUCCESS,
        )
    return f"{where} was paused already; nothing changed.", messages.WARNING
