"""The Broker: the only object that sends commands to Redis.

Every state change is one Lua script on one queue (DESIGN.md §3). A batch that spans queues is
one pipeline of per-queue script calls, so it still costs one round trip on a single Redis.
"""

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from typing import Any
from weakref import WeakKeyDictionary

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script

from ..conf import BackendSettings, Durability
from ..exceptions import BrokerUnavailable
from .calls import Command, asend_each, send, send_each
from .connection import make_async_client, make_client, translated_errors
from .keys import KeySpace, QueueKeys, queue_of
from .metrics import MAX_TASK_PATHS, MINUTE_TTL_MS, current_minute, increments, waiting_since_ms
from .payloads import task_path
from .scripts import ScriptCall, ScriptName, register_scripts, script_source
from .topology import AsyncClient, SyncClient
from .types import (
    Acquired,
    Enqueued,
    ExpiredAttempt,
    Finish,
    Lease,
    NewTask,
    Reaped,
    Reservation,
    Start,
    stored_int,
)
from .wake import IdleWaits, wake_groups

WAKE_TOKEN_CAP = 16  # wake tokens kept per queue: enough to wake that many idle fetchers at once
PROMOTE_LIMIT = 1000  # due delayed tasks moved to ready per acquire call
FORGET_WORKER_MS = 24 * 3600 * 1000  # a worker silent this long is dropped from the admin list


def _enqueued(outcome: Enqueued | BrokerUnavailable) -> Enqueued:
    if isinstance(outcome, BrokerUnavailable):
        raise outcome
    return outcome


def _lines(value: str | None) -> list[str]:
    return value.split("\n") if value else []


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
        workers=_lines(workers),
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


class Broker:
    """Redis access for one backend alias. Thread-safe: redis-py pools its connections."""

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.keyspace = KeySpace(settings.key_prefix, settings.alias)
        self._known_queues: set[str] = set()
        self._idle = IdleWaits(lambda: self.client, self.translated_errors)
        self._async_clients: WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncClient, dict[ScriptName, AsyncScript]]
        ] = WeakKeyDictionary()

    @cached_property
    def client(self) -> SyncClient:
        with self.translated_errors():  # a Redis Cluster client reads the slot map when built
            return make_client(self.settings)

    @cached_property
    def _scripts(self) -> dict[ScriptName, Script]:
        return register_scripts(self.client)

    def _async_client(self) -> tuple[AsyncClient, dict[ScriptName, AsyncScript]]:
        """Return the asyncio client and scripts of the running loop (pools are per loop)."""
        loop = asyncio.get_running_loop()
        if loop not in self._async_clients:
            client = make_async_client(self.settings)
            # Only enqueue runs on the asyncio client, and it must not be flagged allow-oom.
            scripts = {name: client.register_script(script_source(name)) for name in ScriptName}
            self._async_clients[loop] = (client, scripts)
        return self._async_clients[loop]

    def translated_errors(self) -> AbstractContextManager[None]:
        """Turn redis-py errors inside the block into ``BrokerUnavailable`` with the fix."""
        return translated_errors(self.settings.location, self.settings.pool_timeout_s)

    def _run(self, call: ScriptCall, *, durable: bool = False) -> Any:
        """Send one script call; a ``durable`` one is confirmed per OPTIONS['durability']."""
        if durable and self.settings.durability is not Durability.LOCAL:
            return self._send([call], durable=True)[0]
        with self.translated_errors():
            return self._scripts[call.name](keys=call.keys, args=call.args)

    def _send(self, calls: Sequence[ScriptCall], *, durable: bool) -> list[Any]:
        """Send ``calls`` as one pipeline (split by node on a Redis Cluster); raise any error."""
        with self.translated_errors():
            return send(self.client, self._scripts, self.settings, calls, confirm=durable)

    def _run_per_queue(self, calls: Sequence[ScriptCall], *, durable: bool) -> list[Any]:
        """Send one script call per queue: directly for one, as one pipeline for several."""
        if len(calls) == 1:
            return [self._run(calls[0], durable=durable)]
        return self._send(calls, durable=durable)

    def queue_keys(self, queue: str) -> QueueKeys:
        return self.keyspace.queue(queue)

    def record_key(self, task_id: str) -> str | None:
        queue = queue_of(task_id)
        return None if queue is None else self.queue_keys(queue).record(task_id)

    # Enqueue -------------------------------------------------------------------------------

    def _enqueue_call(self, queue: str, tasks: Sequence[NewTask]) -> ScriptCall:
        keys = self.queue_keys(queue)
        # Guards go first, so a batch without any costs the script one "0" (enqueue.lua).
        guards: list[str | int] = []
        args: list[str | int] = []
        for position, task in enumerate(tasks, start=1):
            if task.guard is not None:
                guards += [position, task.guard.kind, task.guard.name, task.guard.value_ms]
            run_after = "" if task.run_after_ms is None else task.run_after_ms
            args += [task.id, task.payload, task.priority, run_after, task.enqueued_ms]
        return ScriptCall(
            ScriptName.ENQUEUE,
            (
                keys.record_prefix,
                keys.ready,
                keys.delayed,
                keys.seq,
                keys.wake,
                keys.unique_prefix,
                keys.fired_prefix,
            ),
            (WAKE_TOKEN_CAP, len(guards) // 4, *guards, *args),
        )

    def _new_queues(self, groups: Mapping[str, Sequence[NewTask]]) -> list[str]:
        return [queue for queue in groups if queue not in self._known_queues]

    @staticmethod
    def _enqueued(tasks: Sequence[NewTask], reply: int | list[Any]) -> Enqueued:
        """Read enqueue.lua's reply: a count, or a list when some unique tasks were duplicates."""
        if isinstance(reply, int):
            return Enqueued(stored=reply, existing={})
        stored, *duplicates = reply
        return Enqueued(
            stored=int(stored),
            existing={
                tasks[int(position) - 1].id: holder
                for position, holder in zip(duplicates[::2], duplicates[1::2], strict=True)
            },
        )

    def _registration(self, new_queues: list[str]) -> list[Command]:
        """Return the SADD that makes ``new_queues`` known, sent before their first tasks."""
        return [("SADD", self.keyspace.queues, *new_queues)] if new_queues else []

    def _enqueue_replies(
        self,
        groups: Mapping[str, Sequence[NewTask]],
        new_queues: list[str],
        registered: list[Any],
        outcomes: list[Any],
    ) -> list[Enqueued | BrokerUnavailable]:
        """Pair per-queue outcomes with what was stored or translated errors."""
        if new_queues and not any(isinstance(reply, Exception) for reply in registered):
            self._known_queues.update(new_queues)
        return [
            self._enqueued_or_error(tasks, outcome)
            for tasks, outcome in zip(groups.values(), outcomes, strict=True)
        ]

    def _enqueued_or_error(
        self, tasks: Sequence[NewTask], reply: Any
    ) -> Enqueued | BrokerUnavailable:
        if not isinstance(reply, Exception):
            return self._enqueued(tasks, reply)
        try:
            with self.translated_errors():
                raise reply
        except BrokerUnavailable as exc:
            return exc

    def _bare(self, calls: list[ScriptCall], new_queues: list[str]) -> bool:
        """Tell whether the enqueue is one plain EVALSHA: the common case, no pipeline."""
        return len(calls) == 1 and not new_queues and self.settings.durability is Durability.LOCAL

    def enqueue_groups(
        self, groups: Mapping[str, Sequence[NewTask]]
    ) -> list[Enqueued | BrokerUnavailable]:
        """Store each queue's tasks atomically, all queues in one round trip.

        Return, per queue in ``groups`` order, what was stored (and which unique tasks were
        duplicates) or the error that refused that queue's call (one queue can fail while
        another is written), including a write not confirmed per OPTIONS['durability']. An
        error that loses the whole round trip is raised.
        """
        calls = [self._enqueue_call(queue, tasks) for queue, tasks in groups.items()]
        new_queues = self._new_queues(groups)
        if self._bare(calls, new_queues):
            [tasks], [call] = groups.values(), calls
            return [self._enqueued(tasks, self._run(call))]
        with self.translated_errors():
            registered, outcomes = send_each(
                self.client,
                self._scripts,
                self.settings,
                calls,
                before=self._registration(new_queues),
                confirm=True,
            )
        return self._enqueue_replies(groups, new_queues, registered, outcomes)

    async def aenqueue_groups(
        self, groups: Mapping[str, Sequence[NewTask]]
    ) -> list[Enqueued | BrokerUnavailable]:
        """Async twin of ``enqueue_groups``: the same calls, sent by the asyncio client."""
        calls = [self._enqueue_call(queue, tasks) for queue, tasks in groups.items()]
        new_queues = self._new_queues(groups)
        client, scripts = self._async_client()
        with self.translated_errors():
            if self._bare(calls, new_queues):
                [tasks], [call] = groups.values(), calls
                return [
                    self._enqueued(tasks, await scripts[call.name](keys=call.keys, args=call.args))
                ]
            registered, outcomes = await asend_each(
                client,
                scripts,
                self.settings,
                calls,
                before=self._registration(new_queues),
                confirm=True,
            )
        return self._enqueue_replies(groups, new_queues, registered, outcomes)

    def enqueue(self, queue: str, tasks: Sequence[NewTask]) -> Enqueued:
        """Store ``tasks`` in ``queue`` atomically (one script call); say what was stored."""
        return _enqueued(self.enqueue_groups({queue: tasks})[0])

    async def aenqueue(self, queue: str, tasks: Sequence[NewTask]) -> Enqueued:
        """Async twin of ``enqueue``."""
        return _enqueued((await self.aenqueue_groups({queue: tasks}))[0])

    def register_queues(self, queues: Iterable[str]) -> None:
        """Make ``queues`` known to the reaper and the admin before anything is enqueued."""
        queues = list(queues)
        with self.translated_errors():
            known = self.client.smismember(self.keyspace.queues, queues)
            missing = [queue for queue, found in zip(queues, known, strict=True) if not found]
            try:
                if missing:
                    self.client.sadd(self.keyspace.queues, *missing)
            except redis.exceptions.OutOfMemoryError:
                # A worker restarting while Redis is full must still start: a queue missing
                # here holds no task yet (enqueue adds its name first), so nothing is hidden.
                queues = [queue for queue in queues if queue not in missing]
        self._known_queues.update(queues)

    def last_fired_ms(self, queue: str, schedule: str) -> int | None:
        """Return the last slot ``schedule`` fired into ``queue`` (ms), or None if it never did."""
        with self.translated_errors():
            return stored_int(self.client.get(self.queue_keys(queue).fired(schedule)))

    def queues(self) -> list[str]:
        """Return every queue name this alias has seen, sorted."""
        with self.translated_errors():
            return sorted(self.client.smembers(self.keyspace.queues))

    def server_info(self) -> dict[str, Any]:
        """Return Redis INFO (server, memory, persistence, replication) and whether RDB is on.

        ``save_configured`` is None when CONFIG is not allowed (managed Redis), i.e. unknown.
        """
        with self.translated_errors():
            info: dict[str, Any] = {}
            for section in ("server", "memory", "persistence", "replication"):
                info.update(self.client.info(section))
            try:
                info["save_configured"] = bool(self.client.config_get("save").get("save"))
            except redis.ResponseError:
                info["save_configured"] = None
        return info

    # Records -------------------------------------------------------------------------------

    def record(self, task_id: str) -> dict[str, str] | None:
        """Return the stored fields of ``task_id``, or None if there is no such task."""
        key = self.record_key(task_id)
        if key is None:
            return None
        with self.translated_errors():
            return self.client.hgetall(key) or None

    async def arecord(self, task_id: str) -> dict[str, str] | None:
        """Async twin of ``record``."""
        key = self.record_key(task_id)
        if key is None:
            return None
        with self.translated_errors():
            return await self._async_client()[0].hgetall(key) or None

    # Worker transitions --------------------------------------------------------------------

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

    def _by_queue[T](
        self,
        items: Iterable[T],
        lease_of: Callable[[T], Lease],
        build: Callable[..., ScriptCall],
        also: Iterable[str] = (),
        *,
        durable: bool = False,
    ) -> list[tuple[list[T], Any]]:
        """Group ``items`` by queue, send one script call per queue, pair items with replies.

        Queues in ``also`` get a call even when no item is theirs.
        """
        groups: dict[str, list[T]] = defaultdict(list, {queue: [] for queue in also})
        for item in items:
            groups[lease_of(item).queue].append(item)
        if not groups:
            return []
        calls = [build(self.queue_keys(queue), group) for queue, group in groups.items()]
        return list(zip(groups.values(), self._run_per_queue(calls, durable=durable), strict=True))

    def _fenced_out[T: (Start, Finish)](
        self,
        items: Sequence[T],
        build: Callable[[QueueKeys, list[T]], ScriptCall],
        *,
        durable: bool = False,
    ) -> list[T]:
        """Send ``items`` per queue to a script that answers 1/0 per item; return the 0s."""
        return [
            item
            for group, reply in self._by_queue(
                items, lambda item: item.lease, build, durable=durable
            )
            for item, ok in zip(group, reply, strict=True)
            if not ok
        ]

    def start(self, worker_id: str, starts: Sequence[Start]) -> list[Start]:
        """Mark reserved tasks running; return the notices that were stale (fenced out)."""

        def build(keys: QueueKeys, group: list[Start]) -> ScriptCall:
            args: list[str | int] = [self.settings.lease_ttl_ms, worker_id]
            for start in group:
                args += [start.lease.task_id, start.lease.token, start.started_ms]
            return ScriptCall(ScriptName.START, (keys.record_prefix, keys.leases), tuple(args))

        return self._fenced_out(starts, build)

    def finish(self, worker_id: str, finishes: Sequence[Finish]) -> list[Finish]:
        """Record attempt outcomes and their metrics; return the ones that were stale."""
        ttl_ms = self.settings.result_ttl_ms
        reaping = worker_id == ""
        minute = current_minute()

        def build(keys: QueueKeys, group: list[Finish]) -> ScriptCall:
            limited = self.settings.limit_of(group[0].lease.queue).concurrency is not None
            args: list[str | int] = [
                worker_id,
                "" if ttl_ms is None else ttl_ms,
                len(group),
                MAX_TASK_PATHS,
                MINUTE_TTL_MS,
                int(limited),
            ]
            for f in group:
                args += [
                    f.lease.task_id,
                    f.lease.token,
                    f.outcome.value,
                    f.value,
                    f.started_ms,
                    f.finished_ms,
                    f.retry_delay_ms,
                ]
            args += increments(group, reaping=reaping)
            return ScriptCall(
                ScriptName.FINISH,
                (
                    keys.record_prefix,
                    keys.leases,
                    keys.done,
                    keys.delayed,
                    keys.stats,
                    keys.wake,
                    *self._metric_keys(keys, minute),
                    keys.unique_prefix,
                    keys.ready,
                ),
                tuple(args),
            )

        # An acknowledged result must survive a failover too (OPTIONS['durability']).
        stale = self._fenced_out(finishes, build, durable=True)
        if stale:
            self._count_recorded(finishes, stale, reaping=reaping, minute=minute)
        return stale

    @staticmethod
    def _metric_keys(keys: QueueKeys, minute: int) -> tuple[str, str, str]:
        return (keys.metrics, keys.metrics_minute(minute), keys.metrics_paths)

    def _count_recorded(
        self, finishes: Sequence[Finish], stale: list[Finish], *, reaping: bool, minute: int
    ) -> None:
        """Add the metrics finish.lua skipped: those of the recorded outcomes of its calls
        that also had stale items (rare: a late ack racing the reaper)."""
        fenced = {id(f) for f in stale}
        queues = {f.lease.queue for f in stale}
        recorded = [f for f in finishes if f.lease.queue in queues and id(f) not in fenced]

        def build(keys: QueueKeys, group: list[Finish]) -> ScriptCall:
            return ScriptCall(
                ScriptName.METRICS,
                self._metric_keys(keys, minute),
                (MAX_TASK_PATHS, MINUTE_TTL_MS, *increments(group, reaping=reaping)),
            )

        self._by_queue(recorded, lambda f: f.lease, build)

    def renew(
        self, worker_id: str, leases: Sequence[Lease], served: Iterable[str] = ()
    ) -> list[str]:
        """Extend every lease in ``leases`` by lease_ttl; return the ids whose lease is lost.

        Each queue in ``served`` is renewed too, with no leases if none is held there: the
        worker's heartbeat, so the admin and the metrics count idle workers.
        """

        def build(keys: QueueKeys, group: list[Lease]) -> ScriptCall:
            args: list[str | int] = [self.settings.lease_ttl_ms, worker_id, FORGET_WORKER_MS]
            for lease in group:
                args += [lease.task_id, lease.token]
            return ScriptCall(
                ScriptName.RENEW,
                (keys.record_prefix, keys.leases, keys.workers, keys.held),
                tuple(args),
            )

        return [
            task_id
            for _, reply in self._by_queue(leases, lambda lease: lease, build, served)
            for task_id in reply
        ]

    def release(self, leases: Sequence[Lease]) -> int:
        """Put reserved, never-started tasks back in their place; return how many went back."""

        def build(keys: QueueKeys, group: list[Lease]) -> ScriptCall:
            args: list[str] = []
            for lease in group:
                args += [lease.task_id, lease.token]
            return ScriptCall(
                ScriptName.RELEASE,
                (keys.record_prefix, keys.ready, keys.leases, keys.wake),
                tuple(args),
            )

        return sum(int(reply) for _, reply in self._by_queue(leases, lambda lease: lease, build))

    # Lifecycle -----------------------------------------------------------------------------

    def reap(self, queue: str, limit: int, *, dry_run: bool = False) -> Reaped:
        """Release expired reservations of ``queue`` and report its expired running attempts."""
        keys = self.queue_keys(queue)
        released, expired = self._run(
            ScriptCall(
                ScriptName.REAP,
                (keys.record_prefix, keys.ready, keys.leases, keys.wake),
                (limit, "1" if dry_run else "0"),
            )
        )
        return Reaped(
            released=list(released),
            expired=[
                ExpiredAttempt(
                    lease=Lease(
                        task_id=task_id, queue=queue, token=str(token), task_path=task_path(payload)
                    ),
                    payload=payload,
                    workers=_lines(workers),
                    deadline_ms=int(deadline_ms),
                    errors=list(errors),
                )
                for task_id, token, payload, workers, deadline_ms, errors in expired
            ],
        )

    def cancel(self, task_id: str, error_json: str, finished_ms: int) -> str:
        """Fail a waiting task with ``error_json``; return "cancelled" or the state it was in."""
        queue = queue_of(task_id)
        if queue is None:
            return "missing"
        keys = self.queue_keys(queue)
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
        queue = queue_of(task_id)
        if queue is None:
            return "missing"
        keys = self.queue_keys(queue)
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
        keys = self.queue_keys(queue)
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
