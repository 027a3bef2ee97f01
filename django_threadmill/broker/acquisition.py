"""Acquire: reserve ready tasks for a worker, and block an idle worker until work comes."""

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..codec.payloads import task_path
from ..codec.times import now_ms
from ..conf.limits import QueueLimit
from ..exceptions import BrokerUnavailable, ReservationsUnconfirmed
from .core import BrokerCore
from .damaged import log_set_aside
from .durability import confirms_reservations
from .metrics import waited_ms
from .raw_replies import Undecodable, read_tasks
from .scripts import ScriptCall, ScriptName
from .types import Acquired, Lease, Reservation, stored_int, stored_lines
from .wake import wake_groups

logger = logging.getLogger(__name__)

PROMOTE_LIMIT = 1000  # due delayed tasks moved to ready per acquire call
PEEK = QueueLimit(concurrency=0)  # reserves nothing: see Acquiring._acquire_call
# Random digits after the fence counter in each acquire call's token (acquire.lua, Fence):
# digits, so that a token still reads as one number that grows with the counter.
NONCE_DIGITS = 12
# Characters of payloads and earlier errors one refill replies with at most, over every queue
# and shard it asks (each call its first task whatever its size): counted in tasks alone, a
# refill of 500 tasks of max_payload_bytes held 500 MiB in Redis's reply and in the worker
# (docs/worker.md, Memory a process keeps); given to each call whole, it was 16 MiB a queue.
ACQUIRE_CHARS = 16 * 2**20
PAUSED = 3  # acquire.lua's held_back code for a paused queue


@dataclass(frozen=True, slots=True)
class _Call:
    """What every reservation of one acquire reply shares."""

    queue: str
    token: str
    redis_now_ms: int  # when the script ran, on the Redis clock
    reserved_ms: int  # when its reply arrived, on this worker's clock

    def reservation(
        self,
        task_id: str,
        payload: str,
        workers: str,
        enqueued_ms: str,
        started_ms: str,
        workflow: str,
        lapsed: bool,
        errors: list[str],
    ) -> Reservation:
        """Return one reservation, its lease carrying what the metrics need."""
        enqueued, started = stored_int(enqueued_ms), stored_int(started_ms)
        return Reservation(
            lease=Lease(
                task_id=task_id,
                queue=self.queue,
                token=self.token,
                task_path=task_path(payload),
                waited_ms=waited_ms(
                    payload, enqueued, started, self.redis_now_ms, failed_before=bool(errors)
                ),
                reserved_ms=self.reserved_ms,
            ),
            payload=payload,
            workers=stored_lines(workers),
            enqueued_ms=enqueued,
            started_ms=started,
            errors=errors,
            workflow=workflow,
            lapsed=lapsed,
        )


def _acquired(alias: str, queue: str, reply: list[Any]) -> tuple[Acquired, str, list[Undecodable]]:
    """Read acquire.lua's reply, as bytes: the reservations, when to look again, whether a
    limit or a pause held, and how many damaged records it set aside (logged here); with the
    call's token and the tasks whose fields did not decode, for ``set_aside``."""
    next_due_ms, held_back, raw_token, set_aside, redis_now_ms = reply[:5]
    if held_back == PAUSED:  # answered as an empty queue, nothing read or written
        return Acquired(reservations=[], next_due_ms=None, paused=True), "", []
    if set_aside:
        log_set_aside(alias, queue, int(set_aside), "acquire")
    token = raw_token.decode()
    call = _Call(queue, token, int(redis_now_ms), now_ms())
    reservations, undecodable = read_tasks(reply[5:], call.reservation)
    if undecodable and held_back == 1:
        # Set aside by the caller, they give back the slots they took: what the concurrency
        # limit held back is looked at now, not after a finish's wake token that may never come.
        return Acquired(reservations=reservations, next_due_ms=0), token, undecodable
    acquired = Acquired(
        reservations=reservations,
        next_due_ms=None if int(next_due_ms) < 0 else int(next_due_ms),
        held_back=held_back != 0,
        by_rate=held_back == 2,
    )
    return acquired, token, undecodable


def _peeked(alias: str, queue: str, reply: list[Any]) -> Acquired:
    """Read a peek's reply: tasks held back means ready tasks wait there, so look again now."""
    if reply[3]:
        log_set_aside(alias, queue, int(reply[3]), "acquire")
    waiting = reply[1] == 1
    next_due_ms = int(reply[0])
    return Acquired(
        reservations=[],
        next_due_ms=0 if waiting else (None if next_due_ms < 0 else next_due_ms),
        paused=reply[1] == PAUSED,
    )


def merged_acquired(one: Acquired, other: Acquired) -> Acquired:
    """Return the replies of two acquire calls as one: both reservations, the sooner due time."""
    dues = [due for due in (one.next_due_ms, other.next_due_ms) if due is not None]
    return Acquired(
        reservations=one.reservations + other.reservations,
        next_due_ms=min(dues, default=None),
        held_back=one.held_back or other.held_back,
        by_rate=one.by_rate or other.by_rate,
        failed=one.failed or other.failed,
        paused=one.paused or other.paused,
    )


def chars_share(budget: int, count: int, of: int) -> int:
    """Return the characters one call of a round trip may reply with, asking ``count`` of the
    ``of`` its calls ask in all: its part of ``budget`` (1 for a call asking none, a peek).
    The calls of one round trip share a budget: each given it whole, a worker or reaper of
    fifty queues held fifty times as much."""
    return max(1, budget * count // of) if count else 1


class Acquiring(BrokerCore):
    """The acquire and idle-wait section of the Broker."""

    release: Callable[[Sequence[Lease]], int]  # the Broker's, from Transitions

    def acquire(self, queue: str, count: int) -> Acquired:
        """Promote due delayed tasks, then reserve up to ``count`` ready ones (one call).

        A paused queue (broker/pausing.py) reserves and promotes nothing, and answers as an
        empty one does, so an idle worker blocks until resume wakes it.
        """
        [acquired] = self.acquire_from({queue: count})
        return acquired

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        """Acquire up to ``counts[queue]`` from each queue, in one round trip; in that order.

        A sharded queue asks every shard in the same round trip, its count split evenly over
        them and the remainder going to the shard first in turn, which moves on by one each
        call: no shard starves. A shard whose share is 0 is peeked at (``_acquire_call``); if
        it holds ready tasks, the queue's reply says to look again now (``next_due_ms`` 0), so
        a worker never takes a sharded queue for empty while a shard it skipped holds tasks.
        Priority order holds within a shard, not across shards (docs/scaling.md).

        A queue whose call failed while others' did not (a key of another type: docs/lifecycle.md)
        answers with the error in ``failed``: the others' reservations were made and leased,
        and must reach the worker. When every call failed, the first error is raised. Under
        durability="replicated" a queue whose reservations no replica confirmed hands them back
        and answers with ``failed`` too (``_handed_back``).
        """
        if not counts:
            return []
        asked = [
            (queue, part, n)
            for queue, count in counts.items()
            for part, n in self._split(queue, count)
        ]
        asked_for = sum(n for _, _, n in asked)
        calls = [
            self._acquire_call(queue, part, n, chars_share(ACQUIRE_CHARS, n, asked_for))
            for queue, part, n in asked
        ]
        if confirms_reservations(self.settings):
            answers = self._run_each_confirmed(calls)
        else:
            answers = [(reply, None) for reply in self._run_each_per_queue(calls)]
        acquired: dict[str, Acquired] = {}
        for (queue, part, n), (reply, unconfirmed) in zip(asked, answers, strict=True):
            if isinstance(reply, BrokerUnavailable):
                got = Acquired(reservations=[], next_due_ms=None, failed=reply)
            elif n:
                got, token, undecodable = _acquired(self.settings.alias, queue, reply)
                if undecodable:
                    self._set_aside(queue, part, token, undecodable)
                if unconfirmed is not None and got.reservations:
                    got = self._handed_back(queue, got.reservations, unconfirmed)
            else:
                got = _peeked(self.settings.alias, queue, reply)
            acquired[queue] = merged_acquired(acquired[queue], got) if queue in acquired else got
        return [acquired[queue] for queue in counts]

    def _handed_back(
        self, queue: str, reservations: list[Reservation], unconfirmed: BrokerUnavailable
    ) -> Acquired:
        """Hand back unstarted the reservations of a call no replica confirmed; return the
        queue's answer, failed. Run, a task could run twice: a failover now would leave it READY
        on the promoted replica (durability.py, ``confirms_reservations``). Left on a primary
        that can no longer write, they go back to READY when their reservation lapses."""
        try:
            self.release([reservation.lease for reservation in reservations])
        except BrokerUnavailable as exc:
            logger.warning(
                "Unconfirmed reservations not handed back, READY again when they lapse "
                "queue=%s count=%d error=%s",
                queue,
                len(reservations),
                exc,
            )
        failed = ReservationsUnconfirmed(
            f"{unconfirmed} The tasks it reserved ({len(reservations)}) were handed back "
            "unstarted: run, a failover could run them twice."
        )
        return Acquired(reservations=[], next_due_ms=None, failed=failed)

    def _set_aside(self, queue: str, part: str, token: str, tasks: list[Undecodable]) -> None:
        """Set aside the tasks of one acquire that did not decode (broker/raw_replies.py): were
        they left reserved, their leases would lapse and the reaper put them back at the head."""
        keys = self.queue_keys(part)
        entries = [value for task in tasks for value in task]
        call = ScriptCall(
            ScriptName.SET_ASIDE,
            (keys.record_prefix, keys.leases, keys.damaged, keys.ready, keys.wake, keys.outbox),
            (token, self.wake_on_free(queue), *entries),
        )
        log_set_aside(self.settings.alias, queue, int(self._run(call)), "acquire")

    def _split(self, queue: str, count: int) -> list[tuple[str, int]]:
        """Return each part of ``queue`` with how many tasks to ask it for (0: a peek)."""
        if self.settings.shards_of(queue) == 1:
            return [(queue, count)]
        parts = self.parts(queue)
        first = next(self._turns[queue]) % len(parts)
        share, remainder = divmod(count, len(parts))
        turn = parts[first:] + parts[:first]
        return [(part, share + (index < remainder)) for index, part in enumerate(turn)]

    def _acquire_call(self, queue: str, part: str, count: int, most_chars: int) -> ScriptCall:
        """Return the acquire.lua call for one part of ``queue`` (itself, or one shard),
        replying with at most ``most_chars`` of payloads and errors (its first task whatever
        its size).

        A count of 0 is a peek: one task asked under a concurrency limit of 0, so the script
        reserves nothing but still promotes due delayed tasks, returns the next due time, and
        reports (as "held back") whether ready tasks are there.
        """
        keys = self.queue_keys(part)
        limit = PEEK if count == 0 else self.settings.limit_of(queue)
        return ScriptCall(
            ScriptName.ACQUIRE,
            (
                keys.record_prefix,
                keys.ready,
                keys.delayed,
                keys.leases,
                keys.wake,
                keys.rate,
                keys.fence,
                keys.damaged,
                keys.paused,
                keys.outbox,
            ),
            (
                max(count, 1),
                self.settings.lease_ttl_ms,
                PROMOTE_LIMIT,
                "" if limit.concurrency is None else limit.concurrency,
                "" if limit.token_interval_us is None else limit.token_interval_us,
                most_chars,
                f"{secrets.randbelow(10**NONCE_DIGITS):0{NONCE_DIGITS}d}",
            ),
            raw=True,
        )

    def start_turn(self, queue: str) -> float | None:
        """Take the next start of ``queue`` under its rate: 0 when its task may start now, None
        when the queue is paused (its task goes back to READY), else the ms until the next
        start comes, to the µs (pace.lua). A queue without a rate always has one."""
        interval_us = self.settings.limit_of(queue).token_interval_us
        if interval_us is None:
            return 0
        keys = self.queue_keys(queue)
        call = ScriptCall(ScriptName.PACE, (keys.paced, keys.paused), (interval_us,))
        wait_us = int(self._run(call))
        return None if wait_us < 0 else wait_us / 1000

    def _wake_groups(self, queues: Sequence[str], worker_id: str) -> list[list[str]]:
        parts = [part for queue in queues for part in self.parts(queue)]
        return wake_groups(self.keyspace, parts, worker_id, cluster=self.settings.cluster)

    def wait_for_work(self, queues: Sequence[str], worker_id: str, timeout_s: float) -> bool:
        """Block until an enqueue pushes a wake token, ``wake_process`` is called, or timeout;
        True if woken (``wait_for_queues`` says which queues got the tokens)."""
        return self.wait_for_queues(queues, worker_id, timeout_s) is not None

    def wait_for_queues(
        self, queues: Sequence[str], worker_id: str, timeout_s: float
    ) -> frozenset[str] | None:
        """Block until an enqueue pushes a wake token, ``wake_process`` is called, or timeout;
        return the queues whose tokens woke it (empty for the process's own token), or None.

        BLPOP over the queues' wake lists and the process's own list: idle workers block instead of
        polling (docs/design.md, Idle workers block, they do not poll). On a Redis Cluster, queues
        (and the shards of a sharded queue) in several slots are watched by one waiter thread per
        slot, kept until ``wake_process``.
        """
        groups = self._wake_groups(queues, worker_id)
        lists = self._idle.wait((tuple(queues), worker_id), groups, timeout_s)
        if lists is None:
            return None
        return frozenset(
            queue
            for queue in queues
            for part in self.parts(queue)
            if self.queue_keys(part).wake in lists
        )

    def wake_process(self, queues: Sequence[str], worker_id: str) -> None:
        """Wake the process's blocked fetcher now (at shutdown); the token expires if unread."""
        self._idle.wake((tuple(queues), worker_id), self._wake_groups(queues, worker_id))
