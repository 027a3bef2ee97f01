"""Acquire: reserve ready tasks for a worker, and block an idle worker until work comes."""

from collections.abc import Mapping, Sequence
from typing import Any

from .core import BrokerCore
from .metrics import waiting_since_ms
from .payloads import task_path
from .scripts import ScriptCall, ScriptName
from .types import Acquired, Lease, Reservation, stored_int, stored_lines
from .wake import wake_groups

PROMOTE_LIMIT = 1000  # due delayed tasks moved to ready per acquire call


def _reservation(
    queue: str,
    task_id: str,
    token: str | int,
    payload: str,
    workers: str,
    enqueued_ms: str,
    started_ms: str,
    errors: list[str],
) -> Reservation:
    """Return one reservation of an acquire reply, its lease carrying what the metrics need."""
    enqueued, started = stored_int(enqueued_ms), stored_int(started_ms)
    return Reservation(
        lease=Lease(
            task_id=task_id,
            queue=queue,
            token=str(token),
            task_path=task_path(payload),
            waiting_since_ms=waiting_since_ms(payload, enqueued, started),
        ),
        payload=payload,
        workers=stored_lines(workers),
        enqueued_ms=enqueued,
        started_ms=started,
        errors=list(errors),
    )


def _acquired(queue: str, reply: list[Any]) -> Acquired:
    """Read acquire.lua's reply: the reservations, when to look again, whether a limit held."""
    next_due_ms = int(reply[0])
    return Acquired(
        reservations=[_reservation(queue, *entry) for entry in reply[2:]],
        next_due_ms=None if next_due_ms < 0 else next_due_ms,
        held_back=reply[1] == 1,
    )


def merged_acquired(one: Acquired, other: Acquired) -> Acquired:
    """Return the replies of two acquire calls as one: both reservations, the sooner due time."""
    dues = [due for due in (one.next_due_ms, other.next_due_ms) if due is not None]
    return Acquired(
        reservations=one.reservations + other.reservations,
        next_due_ms=min(dues, default=None),
        held_back=one.held_back or other.held_back,
    )


class Acquiring(BrokerCore):
    """The acquire and idle-wait section of the Broker."""

    def acquire(self, queue: str, count: int) -> Acquired:
        """Promote due delayed tasks, then reserve up to ``count`` ready ones (one call)."""
        [acquired] = self.acquire_from({queue: count})
        return acquired

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        """Acquire up to ``counts[queue]`` from each queue, in one round trip; in that order.

        A sharded queue asks every shard in the same round trip, its count split evenly over
        them and the remainder going to the shard first in turn, which moves on by one each
        call: no shard starves. A shard left with nothing to take is still asked (for 0), so
        its due delayed tasks are promoted and its next due time is known. Priority order
        holds within a shard, not across shards (docs/scaling.md).
        """
        if not counts:
            return []
        asked = [
            (queue, part, n)
            for queue, count in counts.items()
            for part, n in self._split(queue, count)
        ]
        calls = [self._acquire_call(queue, part, n) for queue, part, n in asked]
        replies = self._run_per_queue(calls, durable=False)
        acquired: dict[str, Acquired] = {}
        for (queue, _, _), reply in zip(asked, replies, strict=True):
            got = _acquired(queue, reply)
            acquired[queue] = merged_acquired(acquired[queue], got) if queue in acquired else got
        return [acquired[queue] for queue in counts]

    def _split(self, queue: str, count: int) -> list[tuple[str, int]]:
        """Return each part of ``queue`` with how many tasks to ask it for."""
        if self.settings.shards_of(queue) == 1:
            return [(queue, count)]
        parts = self.parts(queue)
        first = next(self._turns[queue]) % len(parts)
        share, remainder = divmod(count, len(parts))
        turn = parts[first:] + parts[:first]
        return [(part, share + (index < remainder)) for index, part in enumerate(turn)]

    def _acquire_call(self, queue: str, part: str, count: int) -> ScriptCall:
        """Return the acquire.lua call for one part of ``queue`` (itself, or one shard)."""
        keys = self.queue_keys(part)
        limit = self.settings.limit_of(queue)
        return ScriptCall(
            ScriptName.ACQUIRE,
            (keys.record_prefix, keys.ready, keys.delayed, keys.leases, keys.wake, keys.rate),
            (
                count,
                self.settings.lease_ttl_ms,
                PROMOTE_LIMIT,
                "" if limit.concurrency is None else limit.concurrency,
                "" if limit.token_interval_ms is None else limit.token_interval_ms,
            ),
        )

    def _wake_groups(self, queues: Sequence[str], worker_id: str) -> list[list[str]]:
        parts = [part for queue in queues for part in self.parts(queue)]
        return wake_groups(self.keyspace, parts, worker_id, cluster=self.settings.cluster)

    def wait_for_work(self, queues: Sequence[str], worker_id: str, timeout_s: float) -> bool:
        """Block until an enqueue pushes a wake token, ``wake_process`` is called, or timeout.

        BLPOP over the queues' wake lists and the process's own list: idle workers block
        instead of polling (DESIGN.md §3 rule 7). On a Redis Cluster, queues (and the shards of
        a sharded queue) in several slots are watched by one waiter thread per slot, kept
        until ``wake_process``.
        """
        groups = self._wake_groups(queues, worker_id)
        return self._idle.wait((tuple(queues), worker_id), groups, timeout_s)

    def wake_process(self, queues: Sequence[str], worker_id: str) -> None:
        """Wake the process's blocked fetcher now (at shutdown); the token expires if unread."""
        self._idle.wake((tuple(queues), worker_id), self._wake_groups(queues, worker_id))
