"""Every Redis key django-threadmill uses, built in one place.

One queue is the unit of atomicity and of sharding: all keys of a queue share the hash tag
``{alias:queue}``, so a Redis Cluster can place each queue on its own shard and no script ever
touches two queues. The few keys that span queues sit under the alias tag ``{alias}``.

A queue split by ``OPTIONS["queue_shards"]`` into N shards keeps N sets of those keys, one per
*part* ``queue#kofN.s`` (tag ``{alias:queue#kofN.s}``, see ``queue_parts``); a task lives in
shard ``crc32(task id) % N``, so its record key follows from its id alone. With N = 1 the part is
the queue: today's keys exactly. N is in the name, so no two shard counts share a part: a task
stored under another N is never half-served (docs/scaling.md, Changing the shard count).
"""

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from itertools import count

from redis.crc import key_slot

SHARD_SEPARATOR = "#"  # outside the queue-name alphabet, so a part never names a real queue
WORKFLOW_TAG = "@wf:"  # starts a workflow's hash tag after the alias; "@" names no queue
CLUSTER_SLOTS = 16384  # hash slots of a Redis Cluster


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys of one queue of one backend alias.

    docs/design.md, Rules of the Redis data model, lists them.
    """

    prefix: str  # e.g. "tm:{default:emails}"

    @property
    def record_prefix(self) -> str:
        """Prefix of the per-task hashes; scripts append the task id (see broker/lua/README)."""
        return f"{self.prefix}:t:"

    def record(self, task_id: str) -> str:
        return f"{self.record_prefix}{task_id}"

    @property
    def unique_prefix(self) -> str:
        """Prefix of unique keys; scripts append a task's unique digest (docs/schedules.md)."""
        return f"{self.prefix}:u:"

    @property
    def fired_prefix(self) -> str:
        """Prefix of schedule markers (last slot fired); scripts append the schedule name."""
        return f"{self.prefix}:fired:"

    def fired(self, schedule: str) -> str:
        return f"{self.fired_prefix}{schedule}"

    @property
    def ready(self) -> str:
        return f"{self.prefix}:ready"

    @property
    def delayed(self) -> str:
        return f"{self.prefix}:delayed"

    @property
    def leases(self) -> str:
        return f"{self.prefix}:leases"

    @property
    def done(self) -> str:
        return f"{self.prefix}:done"

    @property
    def wake(self) -> str:
        return f"{self.prefix}:wake"

    @property
    def rate(self) -> str:
        return f"{self.prefix}:rate"

    @property
    def paced(self) -> str:
        """String: the Redis time (ms) before which no task of a rate-limited queue starts."""
        return f"{self.prefix}:paced"

    @property
    def paused(self) -> str:
        """String present while the queue is paused: when, by whom and why (broker/pausing.py)."""
        return f"{self.prefix}:paused"

    @property
    def seq(self) -> str:
        return f"{self.prefix}:seq"

    @property
    def fence(self) -> str:
        """Counter whose next value fences every task one acquire call reserves (acquire.lua)."""
        return f"{self.prefix}:fence"

    @property
    def damaged(self) -> str:
        """Hash of the records (and guard keys) scripts set aside: id -> "<ms> <script>: <why>"."""
        return f"{self.prefix}:damaged"

    @property
    def stats(self) -> str:
        return f"{self.prefix}:stats"

    @property
    def metrics(self) -> str:
        """Hash of lifetime counters and histogram buckets per task path (broker/metrics.py)."""
        return f"{self.prefix}:metrics"

    @property
    def metrics_paths(self) -> str:
        """Sorted set of the task paths counted under their own name, by when one was last
        counted (ms); later ones count as "other", and one unseen for PATH_TTL_MS is dropped."""
        return f"{self.prefix}:metrics:paths"

    @property
    def metrics_minute_prefix(self) -> str:
        """Prefix of the per-minute hashes; metrics.lua appends the Redis minute."""
        return f"{self.prefix}:metrics:"

    def metrics_minute(self, minute: int) -> str:
        """Hash of the same counters for one minute (epoch minutes), kept for two hours."""
        return f"{self.metrics_minute_prefix}{minute}"

    def metrics_sent(self, sender: str) -> str:
        """String: the number of ``sender``'s last metrics send counted in this queue, so a
        send whose reply was lost is counted once when sent again (metrics.lua)."""
        return f"{self.prefix}:metrics-sent:{sender}"

    @property
    def outbox(self) -> str:
        """List of workflow steps of this queue that ended, for their workflow to advance."""
        return f"{self.prefix}:outbox"

    @property
    def workers(self) -> str:
        return f"{self.prefix}:workers"

    @property
    def held(self) -> str:
        return f"{self.prefix}:held"

    @property
    def threads(self) -> str:
        """Hash of each worker process's live worker threads at its last renewal."""
        return f"{self.prefix}:threads"

    @property
    def stopped(self) -> str:
        """Sorted set of hosts by when a worker process of theirs last signed off (ms, Redis
        clock): ``threadmill_health`` says when a host whose processes all stopped was last
        seen."""
        return f"{self.prefix}:stopped"

    def process_wake(self, worker_id: str) -> str:
        """List a worker process blocks on besides the queues' own, so its stop wakes it.

        It lives under the tag of the first queue the process serves: a worker of one queue
        then blocks within one hash slot, which a Redis Cluster accepts.
        """
        return f"{self.prefix}:wake:{worker_id}"


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Key builder for one backend alias under one key prefix."""

    key_prefix: str
    alias: str

    def queue(self, queue_name: str) -> QueueKeys:
        return QueueKeys(f"{self.key_prefix}:{{{self.alias}:{queue_name}}}")

    @property
    def queues(self) -> str:
        """Set of every queue name ever enqueued to, so the reaper and admin find them all."""
        return f"{self.key_prefix}:{{{self.alias}}}:queues"

    def workflow(self, workflow_id: str) -> str:
        """Hash of one workflow (broker/workflows.py), under its own hash tag: a workflow's
        steps may live in any slot, and each workflow call touches this key alone. The
        separator is outside the queue-name alphabet, so the tag names no queue."""
        return f"{self.key_prefix}:{{{self.alias}:{WORKFLOW_TAG}{workflow_id}}}"

    @property
    def layouts(self) -> str:
        """Set of ``queue#N``: each shard count N > 1 a queue's tasks were stored under, so the
        checks find tasks left under an earlier ``queue_shards`` (``shard_layout``)."""
        return f"{self.key_prefix}:{{{self.alias}}}:layouts"

    @property
    def workflows(self) -> str:
        """Sorted set of workflow ids by creation time in ms, for the admin's list."""
        return f"{self.key_prefix}:{{{self.alias}}}:workflows"

    @property
    def server(self) -> str:
        """String: the Redis server the reapers last saw and since when (server_seen.lua)."""
        return f"{self.key_prefix}:{{{self.alias}}}:server"


def shard_of(task_id: str, shards: int) -> int:
    """Return the shard (0..shards-1) a task id lives in: stable, from the id alone."""
    return zlib.crc32(task_id.encode()) % shards


def shard_layout(queue_name: str, shards: int) -> str:
    """Return the member of ``KeySpace.layouts`` saying ``queue_name`` was split ``shards`` ways."""
    return f"{queue_name}{SHARD_SEPARATOR}{shards}"


@cache
def queue_parts(alias: str, queue_name: str, shards: int) -> tuple[str, ...]:
    """Return the names whose keys hold ``queue_name``: itself, or one per shard.

    Shard k's name is ``queue#kofN.s`` (N = ``shards``) with the first salt ``s`` whose hash
    slot lies in the k-th of N equal slot ranges. A cluster made by ``redis-cli --cluster
    create`` gives each primary one contiguous range of equal size, so the shards spread evenly
    over the primaries (N a multiple of their number: the same count on each); plain names
    landed 4, 1 and 1 of 6 shards on three primaries.
    """
    if shards == 1:
        return (queue_name,)
    return tuple(_spread_part(alias, queue_name, k, shards) for k in range(shards))


def queue_of_part(part: str) -> str:
    """Return the queue whose keys ``part`` (one of ``queue_parts``) names."""
    return part.partition(SHARD_SEPARATOR)[0]


def part_shards(part: str) -> int:
    """Return the shard count N whose parts ``part`` (one of ``queue_parts``) is among: 1 for
    a queue's own name, N for ``queue#kofN.s``."""
    _, separator, shard = part.partition(SHARD_SEPARATOR)
    return int(shard.partition("of")[2].partition(".")[0]) if separator else 1


def _spread_part(alias: str, queue_name: str, k: int, shards: int) -> str:
    for salt in count():
        part = f"{queue_name}{SHARD_SEPARATOR}{k}of{shards}.{salt}"
        # The hash tag of a part's keys is "{alias:part}": its slot is that text's.
        if key_slot(f"{alias}:{part}".encode()) * shards // CLUSTER_SLOTS == k:
            return part
    raise AssertionError("unreachable: count() never ends")


def routed_task_id(candidates: Iterable[str], route: str, shards: int) -> str:
    """Return the first id of ``candidates`` in the shard of ``route``.

    Tasks that must meet in one shard (equal unique tasks, the slots of one schedule) share a
    route; trying ids until one lands there keeps every record findable from its id alone
    (about ``shards`` tries; ``candidates`` must be unbounded).
    """
    if shards == 1:
        return next(iter(candidates))
    target = shard_of(route, shards)
    return next(task_id for task_id in candidates if shard_of(task_id, shards) == target)
