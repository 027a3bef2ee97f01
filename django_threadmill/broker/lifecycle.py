"""Lifecycle: reap expired leases, cancel, requeue and purge (the reaper and the admin), and
flush a test's Redis (django_threadmill.testing)."""

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from ..codec.payloads import task_path
from ..exceptions import BrokerUnavailable, UniqueKeyHeld
from .acquisition import ACQUIRE_CHARS, chars_share
from .damaged import log_set_aside
from .layouts import Layouts
from .raw_replies import UndecodableAttempt, read_expired, stored_id
from .scripts import ScriptCall, ScriptName
from .types import ExpiredAttempt, Lease, Reaped, stored_int, stored_lines
from .workflows import StoppedStep

FLUSH_BATCH = 1000  # keys per SCAN step and per UNLINK when flushing
# Entries one reap or purge script call may take: Redis serves no other client while a script
# runs, and an expired running attempt costs about 19 µs of it (docs/lifecycle.md, Throughput).
MAX_BATCH_SIZE = 10_000
DEFAULT_PURGE_BATCH_SIZE = 500  # finished results one purge script call looks at
CANCEL_BATCH = 500  # tasks one cancel.lua call cancels (about 10 commands each)
# Characters of payloads and earlier errors one reap round replies with at most, over every
# queue part it reaps (each call its first running attempt whatever its size), as a refill: 500
# lapsed attempts of max_payload_bytes held 500 MiB in Redis's reply and in the reaper.
REAP_CHARS = ACQUIRE_CHARS


def _cancel_args(
    cancels: Sequence[tuple[str, str, StoppedStep | None]], places: Sequence[int]
) -> Iterator[str]:
    """cancel.lua's per-task arguments of the ``cancels`` at ``places``: id, stop, stop_why."""
    for n in places:
        task_id, _, stop = cancels[n]
        yield task_id
        yield from stop.noted() if stop else ("", "")


def checked_batch_size(value: object, given_as: str) -> int:
    """Return ``value`` if it is an int from 1 to ``MAX_BATCH_SIZE``, or raise naming how it
    was ``given_as`` and the fix: 0 would loop forever, a huge one hold Redis for seconds."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH_SIZE:
        raise ValueError(
            f"{given_as} is not a whole number from 1 to {MAX_BATCH_SIZE:,}: a batch is one "
            "script call, and Redis serves no other client while it runs. Use e.g. 500."
        )
    return value


def _expired_attempt(
    queue: str,
    task_id: str,
    token: str,
    payload: str,
    workers: str,
    deadline_ms: str,
    errors: list[str],
    workflow: str,
    times: list[str],
) -> ExpiredAttempt:
    """Return one expired running attempt of a reap reply, decoded."""
    enqueued_ms, started_ms, attempted_ms = times
    return ExpiredAttempt(
        lease=Lease(task_id=task_id, queue=queue, token=token, task_path=task_path(payload)),
        payload=payload,
        workers=stored_lines(workers),
        # A score set by hand ("-inf" to reap it now) failed every pass here.
        deadline_ms=stored_int(deadline_ms),
        errors=errors,
        workflow=workflow,
        enqueued_ms=stored_int(enqueued_ms),
        started_ms=stored_int(started_ms),
        attempted_ms=stored_int(attempted_ms),
    )


class Lifecycle(Layouts):
    """The reap, cancel, requeue and purge section of the Broker."""

    def reap(self, queue: str, limit: int, *, dry_run: bool = False) -> Reaped:
        """Release expired reservations of ``queue`` and report its expired running attempts
        (``reap_each`` of one queue; its error raised, a part's in ``failed_parts``)."""
        [reaped] = self.reap_each([queue], limit, dry_run=dry_run)
        if isinstance(reaped, BrokerUnavailable):
            raise reaped
        return reaped

    def reap_each(
        self,
        queues: Sequence[str] | Mapping[str, Sequence[str]],
        limit: int,
        *,
        dry_run: bool = False,
    ) -> list[Reaped | BrokerUnavailable]:
        """Reap every part of ``queues`` in one round trip (split by node on a Redis Cluster);
        return per queue what ``reap`` returns, or the error its parts met when every one did.

        ``queues`` may map each queue to the parts to reap: the reaper's pass leaves out those
        on a Redis Cluster primary that did not answer, and reaps the others (a sharded
        queue's shards still served among them).

        ``limit`` applies per queue part: fewer than ``limit`` lease entries looked at in all
        of a queue's parts means every part is done. A queue's error (a key of another type)
        is its own, the others' replies stand, and so is a part's: the replies of its queue's
        other parts are returned, the part in ``failed_parts`` (their calls ran: dropped with
        its error, the expired running attempts they reported went unsettled every pass while
        its key stayed). An error of the round trip itself is raised.

        The reply is read as bytes and decoded field by field: an attempt with a field that
        is not UTF-8 is set aside (counted in ``set_aside``), where decoded as a whole it
        failed every pass (broker/raw_replies.py), by one more call to its part: that call's
        error fails that part, as its reap call's would. A released id that is not UTF-8 is a
        ``NotUtf8Id``: back in ready, acquire sets it aside.
        """
        parts = queues if isinstance(queues, Mapping) else {q: self.parts(q) for q in queues}
        calls_made = max(1, sum(len(parts[queue]) for queue in queues))
        most_chars = chars_share(REAP_CHARS, 1, calls_made)
        calls = [
            self._reap_call(queue, part, limit, dry_run, most_chars)
            for queue in queues
            for part in parts[queue]
        ]
        replies = iter(self._run_each(calls))
        return [
            self._reaped(queue, [(part, next(replies)) for part in parts[queue]], dry_run)
            for queue in queues
        ]

    def _reap_call(
        self, queue: str, part: str, limit: int, dry_run: bool, most_chars: int
    ) -> ScriptCall:
        keys = self.queue_keys(part)
        interval_us = self.settings.limit_of(queue).token_interval_us
        return ScriptCall(
            ScriptName.REAP,
            (
                keys.record_prefix,
                keys.ready,
                keys.leases,
                keys.wake,
                keys.damaged,
                keys.workers,
                keys.rate,
                keys.outbox,
            ),
            (
                limit,
                "1" if dry_run else "0",
                self.wake_on_free(queue),
                most_chars,
                self.settings.lease_ttl_ms,
                "" if interval_us is None else interval_us,
            ),
            raw=True,
        )

    def _reaped(
        self, queue: str, part_replies: list[tuple[str, Any]], dry_run: bool
    ) -> Reaped | BrokerUnavailable:
        """Return the reap replies of ``queue``'s parts decoded as one ``Reaped``, or the
        error of its first part when every one failed.

        A part fails when its call did, or when setting aside its expired attempts that do not
        decode did (a key of another type there, its node gone since): it goes in
        ``failed_parts``, its reply dropped as if its call had failed (those attempts come
        back next pass), and the other parts' replies stand. Raised, that error dropped theirs
        too: the expired running attempts they reported went unsettled every pass it lasted.
        """
        outcomes = {
            part: reply
            if isinstance(reply, BrokerUnavailable)
            else self._part_reaped(queue, part, reply, dry_run)
            for part, reply in part_replies
        }
        read = [outcome for outcome in outcomes.values() if isinstance(outcome, Reaped)]
        failed = {
            part: outcome
            for part, outcome in outcomes.items()
            if isinstance(outcome, BrokerUnavailable)
        }
        if not read:
            return next(iter(failed.values()))
        set_aside = sum(reaped.set_aside for reaped in read)
        if set_aside and not dry_run:
            log_set_aside(self.settings.alias, queue, set_aside, "reap")
        return Reaped(
            released=[task_id for reaped in read for task_id in reaped.released],
            expired=[attempt for reaped in read for attempt in reaped.expired],
            set_aside=set_aside,
            looked_at=sum(reaped.looked_at for reaped in read),
            cut_short=any(reaped.cut_short for reaped in read),
            failed_parts=failed,
        )

    def _part_reaped(
        self, queue: str, part: str, reply: Any, dry_run: bool
    ) -> Reaped | BrokerUnavailable:
        """Return the reap reply of one part of ``queue`` decoded, setting aside (unless
        ``dry_run``) its expired attempts that do not decode; or the error that failed that."""
        released, expired, count, looked_at, cut = reply
        attempts, undecodable = read_expired(expired, partial(_expired_attempt, queue))
        try:
            set_aside = (
                len(undecodable) if dry_run else self._set_aside_expired(queue, part, undecodable)
            )
        except BrokerUnavailable as exc:
            return exc
        return Reaped(
            released=[stored_id(task_id) for task_id in released],
            expired=attempts,
            set_aside=int(count) + set_aside,
            looked_at=int(looked_at),
            cut_short=cut == 1,
        )

    def _set_aside_expired(self, queue: str, part: str, attempts: list[UndecodableAttempt]) -> int:
        """Set aside the expired running attempts of one reap reply that did not decode
        (broker/raw_replies.py), fenced by each one's token; return how many were."""
        if not attempts:
            return 0
        keys = self.queue_keys(part)
        call = ScriptCall(
            ScriptName.SET_ASIDE_EXPIRED,
            (keys.record_prefix, keys.leases, keys.damaged, keys.ready, keys.wake, keys.outbox),
            (self.wake_on_free(queue), *(value for attempt in attempts for value in attempt)),
        )
        return int(self._run(call))

    def cancel(
        self, task_id: str, error_json: str, finished_ms: int, stopped: StoppedStep | None = None
    ) -> str:
        """Fail a waiting task with ``error_json``; return "cancelled" or the state it was in
        ("missing"; "damaged" when its record cannot be read, which is then set aside). A
        workflow step cancelled leaves its id in the outbox, as a finish does.

        ``stopped``: the task is that workflow step, and its record keeps why, cancelled or
        held by a worker (reserved, running), so that no worker starts it, nor retries it,
        once the workflow's hash expired (docs/workflows.md, Cancel).
        """
        [answer] = self.cancel_each([(task_id, error_json, stopped)], finished_ms)
        return answer

    def cancel_each(
        self, cancels: Sequence[tuple[str, str, StoppedStep | None]], finished_ms: int
    ) -> list[str]:
        """``cancel`` each (task id, error JSON, stop) of ``cancels``; return their answers.

        They go in one round trip, one cancel.lua call per queue part and error for at most
        ``CANCEL_BATCH`` tasks: a workflow's cancel stops each of its steps still waiting,
        thousands in a large group, where one round trip each held the caller for seconds,
        and one call each cost the client as much (docs/workflows.md, What it costs).
        """
        answers = ["missing"] * len(cancels)
        sent, calls = self._cancel_calls(cancels, finished_ms)
        replies = self._run_per_queue(calls, durable=False) if calls else []
        set_aside: Counter[str] = Counter()
        for (part, chunk), reply in zip(sent, replies, strict=True):
            for n, answer in zip(chunk, reply, strict=True):
                answers[n] = str(answer)
                set_aside[part] += answer == "damaged"
        for part, count in set_aside.items():
            if count:
                log_set_aside(self.settings.alias, part, count, ScriptName.CANCEL)
        return answers

    def _cancel_calls(
        self, cancels: Sequence[tuple[str, str, StoppedStep | None]], finished_ms: int
    ) -> tuple[list[tuple[str, list[int]]], list[ScriptCall]]:
        """cancel.lua's calls for ``cancels``, and per call its part and its tasks' places in
        ``cancels`` (a task of no queue part gets none: it is "missing")."""
        ttl = "" if self.settings.result_ttl_ms is None else self.settings.result_ttl_ms
        batches: dict[tuple[str, str], list[int]] = {}  # (part, error) -> places in cancels
        for n, (task_id, error, _) in enumerate(cancels):
            part = self.part_of(task_id)
            if part is not None:
                batches.setdefault((part, error), []).append(n)
        sent: list[tuple[str, list[int]]] = []
        calls: list[ScriptCall] = []
        for (part, error), places in batches.items():
            keys = self.queue_keys(part)
            script_keys = (
                keys.record_prefix,
                keys.ready,
                keys.delayed,
                keys.done,
                keys.damaged,
                keys.outbox,
            )
            for start in range(0, len(places), CANCEL_BATCH):
                chunk = places[start : start + CANCEL_BATCH]
                sent.append((part, chunk))
                calls.append(
                    ScriptCall(
                        ScriptName.CANCEL,
                        script_keys,
                        (error, finished_ms, ttl, *_cancel_args(cancels, chunk)),
                    )
                )
        return sent, calls

    def requeue(self, task_id: str) -> str:
        """Give a failed task a new attempt; return "requeued" or the state it was in
        ("missing"; "damaged" when its record cannot be read, which is then set aside).

        Raise ``UniqueKeyHeld``, changing nothing, when an equal unique task that has not
        finished holds the key: the two would run at once (docs/schedules.md, Unique tasks).
        """
        part = self.part_of(task_id)
        if part is None:
            return "missing"
        keys = self.queue_keys(part)
        script_keys = (
            keys.record_prefix,
            keys.ready,
            keys.done,
            keys.wake,
            keys.damaged,
            keys.unique_prefix,
            keys.delayed,
            keys.leases,
        )
        answer = self._run(ScriptCall(ScriptName.REQUEUE, script_keys, (task_id,)))
        if isinstance(answer, list):
            raise UniqueKeyHeld(task_id, holder_id=answer[1])
        if answer == "damaged":
            log_set_aside(self.settings.alias, part, 1, ScriptName.REQUEUE)
        return str(answer)

    def purge(
        self, queue: str, *, state: str = "", batch_size: int = DEFAULT_PURGE_BATCH_SIZE
    ) -> int:
        """Delete the finished results of ``queue`` (optionally one final state only)."""
        return sum(self.purge_batches(queue, state=state, batch_size=batch_size))

    def purge_batches(
        self, queue: str, *, state: str = "", batch_size: int = DEFAULT_PURGE_BATCH_SIZE
    ) -> Iterator[int]:
        """Delete the finished results of ``queue`` as ``purge`` does, yielding how many each
        purge.lua call deleted as soon as it answers: a caller that stops iterating (a stop
        signal, ``threadmill_queue purge``) stops the purge between two calls.

        Every shard count's results go (``every_part``): those finished under an earlier
        ``queue_shards`` are the queue's too (docs/scaling.md, Changing the shard count)."""
        for part in self.every_part(queue):
            yield from self._purge_part(part, state, batch_size)

    def _purge_part(self, part: str, state: str, batch_size: int) -> Iterator[int]:
        keys = self.queue_keys(part)
        after, after_score = "", ""
        while True:
            removed, looked_at, set_aside, kept, kept_score = self._run(
                ScriptCall(
                    ScriptName.PURGE,
                    (keys.record_prefix, keys.done, keys.damaged, keys.outbox),
                    (after, after_score, batch_size, state),
                )
            )
            if set_aside:
                log_set_aside(self.settings.alias, part, int(set_aside), "purge")
            yield int(removed)
            if kept:  # the next call resumes after it (purge.lua says why not at an offset)
                after, after_score = kept, kept_score
            if int(looked_at) < batch_size:
                return

    def flush(self) -> None:
        """Delete every key under this backend's ``key_prefix``, of every alias and queue, and
        forget what this broker remembered of them (queues registered, metrics not yet sent).

        A clean Redis between tests (django_threadmill.testing); never for one in use. Only
        ``<key_prefix>:{...`` keys go: a prefix that merely starts the same is another's.
        """
        with self.translated_errors():
            keys = list(
                self.client.scan_iter(match=f"{self.settings.key_prefix}:{{*", count=FLUSH_BATCH)
            )
            for start in range(0, len(keys), FLUSH_BATCH):
                self.client.unlink(*keys[start : start + FLUSH_BATCH])
        self.forget()

    def forget(self) -> None:
        """Forget what this broker remembered of keys another flushed: the queues it registered
        (else it would not register them again) and the metrics it has not sent."""
        self._known_queues.clear()
        self.tally.forget()
