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


class Acquiring(BrokerCore):
    """The acquire and idle-wait section of the Broker."""

    def acquire(self, queue: str, count: int) -> Acquired:
        """Promote due delayed tasks, then reserve up to ``count`` ready ones (one call)."""
        [acquired] = self.acquire_from({queue: count})
        return acquired

    def acquire_from(self, counts: Mapping[str, int]) -> list[Acquired]:
        """Acquire up to ``counts[queue]`` from each queue, in one round trip; in that order."""
        if not counts:
            return []
        calls = [self._acquire_call(queue, count) for queue, count in counts.items()]
        replies = self._run_per_queue(calls, durable=False)
        return [_acquired(queue, reply) for queue, reply in zip(counts, replies, strict=True)]

    def _acquire_call(self, queue: str, count: int) -> ScriptCall:
        keys = self.queue_keys(queue)
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
        return wake_groups(self.keyspace, queues, worker_id, cluster=self.settings.cluster)

    def wait_for_work(self, queues: Sequence[str], worker_id: str, timeout_s: float) -> bool:
        """Block until an enqueue pushes a wake token, ``wake_process`` is called, or timeout.

        BLPOP over the queues' wake lists and the process's own list: idle workers block
        instead of polling (DESIGN.md §3 rule 7). On a Redis Cluster, queues in several slots
        are watched by one waiter thread per slot, kept until ``wake_process``.
        """
        groups = self._wake_groups(queues, worker_id)
        return self._idle.wait((tuple(queues), worker_id), groups, timeout_s)

    def wake_process(self, queues: Sequence[str], worker_id: str) -> None:
        """Wake the process's blocked fetcher now (at shutdown); the token expires if unread."""
        self._idle.wake((tuple(queues), worker_id), self._wake_groups(queues, worker_id))
