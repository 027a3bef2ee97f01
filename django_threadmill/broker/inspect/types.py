"""What the admin's read-only queries return: index names, counts, rows and one record."""

from dataclasses import dataclass, field
from enum import StrEnum

from ...codec.progress import Progress

DAMAGED = "damaged"  # the state a reader shows for a record key that is not a hash
type Fields = list[str | None] | None  # one HMGET reply; None: the key is not a hash


class Index(StrEnum):
    """The per-queue sorted sets a listing can walk."""

    DONE = "done"  # finished ids by finish time: walked newest first
    READY = "ready"  # by priority, then FIFO: walked in run order
    DELAYED = "delayed"  # by due time: walked soonest first
    LEASES = "leases"  # reserved and running ids by lease deadline: soonest first

    @property
    def newest_first(self) -> bool:
        return self is Index.DONE


@dataclass(frozen=True, slots=True, kw_only=True)
class StateSplit:
    """How many ids of an index are in each state; ``exact`` is False for a sampled estimate."""

    counts: dict[str, int]
    exact: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueOverview:
    """The counts of one queue, read at Redis time ``now_ms``."""

    queue: str
    now_ms: int
    ready: int
    delayed: int
    leased: StateSplit  # "reserved" / "running"
    held: int  # ids in the leases index, exactly: what a concurrency limit counts
    lapsed: int  # of those, leases past their deadline: a reap frees them (a worker died)
    finished: int  # ids in the done index, i.e. within result_ttl
    outcomes: StateSplit  # "successful" / "failed" among them
    finished_since: dict[int, int]  # minutes -> results finished in the last that many minutes
    oldest_ready_since_ms: int | None  # when the longest-waiting READY task became ready
    lifetime: dict[str, int]  # P:stats counters: successful, failed, retry
    shards: int = 1  # OPTIONS["queue_shards"]: the counts above are summed over them


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSighting:
    """A worker process as last seen renewing its leases in one queue."""

    worker_id: str
    queue: str
    held: int
    threads: int  # its live worker threads at that renewal (0 from a reaper or an old worker)
    last_renewal_ms: int

    def live(self, now_ms: int, lease_ttl_ms: int) -> bool:
        """Tell whether the process renewed within a lease of ``now_ms`` (the Redis clock):
        the rule threadmill_workers, threadmill_health and the admin count by.

        A renewal dated more than a lease ahead was made before the clock stepped back (NTP,
        a failover to a replica whose clock lags): counted, a process killed before an hour's
        step read as live for the hour. A live one renews again within a third of a lease, on
        the new clock. Up to a lease ahead still counts: a renewal made between the reads of
        the clock and of the sightings, and a step shorter than a lease, change nothing.
        """
        return abs(now_ms - self.last_renewal_ms) <= lease_ttl_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSightings:
    """What threadmill_health reads of some queues: their sightings, and the sign-offs of its
    host."""

    sightings: list[WorkerSighting]
    signed_off_ms: int | None  # when a process of the host last signed off; None: not in a day
    # Keys of another type, whose part's sightings and sign-offs are left out (docs/lifecycle.md,
    # Keys of another type).
    unread: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRow:
    """The fields of one task record the listing shows."""

    id: str
    queue: str
    state: str
    path: str
    enqueued_ms: int | None
    started_ms: int | None
    finished_ms: int | None
    attempts: int
    errors: int
    progress: Progress | None = None  # the last report of a task that reported any
    # Read in a part of another shard count than the settings give (docs/scaling.md, Changing
    # the shard count): requeue and cancel, which go where the settings put it, miss it.
    stored_elsewhere: bool = False
    # When a delayed task is due: its score in the delayed index, where a listing read it (a
    # retry's due time, which its run_after, earlier or none, is not).
    due_ms: int | None = None

    @classmethod
    def unreadable(cls, task_id: str, queue: str) -> "TaskRow":
        """Return the row of a task whose key is not a hash (docs/lifecycle.md, Damaged records)."""
        return cls(
            id=task_id,
            queue=queue,
            state=DAMAGED,
            path="",
            enqueued_ms=None,
            started_ms=None,
            finished_ms=None,
            attempts=0,
            errors=0,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskDetail:
    """Everything stored about one task, plus where it sits in its queue's indexes."""

    id: str
    queue: str
    key: str  # its record's key, for a message that says where to look
    record: dict[str, str]  # the values read: all but those in ``unread``
    ttl_ms: int | None  # None: the record does not expire
    lease_deadline_ms: int | None
    due_ms: int | None  # when a delayed task becomes ready
    ready_position: int | None  # 0 = the next task this queue hands out
    damaged: str = ""  # why the record cannot be read (its key is not a hash); "" when it can
    not_utf8: str = ""  # which fields hold bytes that are not UTF-8, shown escaped; "" if none
    unread: dict[str, int] = field(default_factory=dict)  # values too big to read: their bytes
    fields_left_out: str = ""  # why fields were not looked at (too many of them); "" if none
    shards: int = 1  # the shard count whose part holds the record
