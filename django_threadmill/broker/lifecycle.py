"""Lifecycle: reap expired leases, cancel, requeue and purge (the reaper and the admin)."""

from ..codec.payloads import task_path
from .core import BrokerCore
from .scripts import ScriptCall, ScriptName
from .types import ExpiredAttempt, Lease, Reaped, stored_lines


class Lifecycle(BrokerCore):
    """The reap, cancel, requeue and purge section of the Broker."""

    def reap(self, queue: str, limit: int, *, dry_run: bool = False) -> Reaped:
        """Release expired reservations of ``queue`` and report its expired running attempts.

        ``limit`` applies per shard of a sharded queue, whose shards go in one round trip:
        fewer than ``limit`` ids in all means every shard is done.
        """
        calls = []
        for part in self.parts(queue):
            keys = self.queue_keys(part)
            calls.append(
                ScriptCall(
                    ScriptName.REAP,
                    (keys.record_prefix, keys.ready, keys.leases, keys.wake),
                    (limit, "1" if dry_run else "0"),
                )
            )
        replies = self._run_per_queue(calls, durable=False)
        released = [task_id for part_released, _ in replies for task_id in part_released]
        expired = [entry for _, part_expired in replies for entry in part_expired]
        return Reaped(
            released=released,
            expired=[
                ExpiredAttempt(
                    lease=Lease(
                        task_id=task_id, queue=queue, token=str(token), task_path=task_path(payload)
                    ),
                    payload=payload,
                    workers=stored_lines(workers),
                    deadline_ms=int(deadline_ms),
                    errors=list(errors),
                )
                for task_id, token, payload, workers, deadline_ms, errors in expired
            ],
        )

    def cancel(self, task_id: str, error_json: str, finished_ms: int) -> str:
        """Fail a waiting task with ``error_json``; return "cancelled" or the state it was in."""
        part = self.part_of(task_id)
        if part is None:
            return "missing"
        keys = self.queue_keys(part)
        ttl_ms = self.settings.result_ttl_ms
        return str(
            self._run(
                ScriptCall(
                    ScriptName.CANCEL,
                    (keys.record_prefix, keys.ready, keys.delayed, keys.done),
                    (task_id, error_json, finished_ms, "" if ttl_ms is None else ttl_ms),
                )
            )
        )

    def requeue(self, task_id: str) -> str:
        """Give a failed task a new attempt; return "requeued" or the state it was in."""
        part = self.part_of(task_id)
        if part is None:
            return "missing"
        keys = self.queue_keys(part)
        return str(
            self._run(
                ScriptCall(
                    ScriptName.REQUEUE,
                    (keys.record_prefix, keys.ready, keys.done, keys.wake),
                    (task_id,),
                )
            )
        )

    def purge(self, queue: str, *, state: str = "", batch_size: int = 500) -> int:
        """Delete the finished results of ``queue`` (optionally one final state only)."""
        return sum(self._purge_part(part, state, batch_size) for part in self.parts(queue))

    def _purge_part(self, part: str, state: str, batch_size: int) -> int:
        keys = self.queue_keys(part)
        deleted = offset = 0
        while True:
            removed, unindexed, looked_at = self._run(
                ScriptCall(
                    ScriptName.PURGE, (keys.record_prefix, keys.done), (offset, batch_size, state)
                )
            )
            deleted += int(removed)
            offset += int(looked_at) - int(unindexed)
            if int(looked_at) < batch_size:
                return deleted
