"""Values that cross the broker edge: what goes into a script and what comes back.

The four made once or more per task (Lease, Reservation, Start, Finish) are typed NamedTuples,
not frozen dataclasses: just as immutable, but a frozen dataclass's ``__init__`` sets each
field through ``object.__setattr__``, measured at 2.3 µs against 0.5 µs for six fields, about
7 µs per task over the four. Build them with keywords all the same.
"""

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import NamedTuple

from ..codec.text import digits_int
from ..exceptions import BrokerUnavailable


def stored_int(value: str | int | float | None) -> int | None:
    """Read a whole number Redis stored (a ms timestamp, a count, a score).

    Absent reads as None, and so does garbage written by hand: one bad field must not break a
    fetch or an admin page.
    """
    if value is None or value == "":
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None


def stored_note(text: str) -> tuple[int | None, str, str]:
    """Read a ``"<ms> <who>: <what>"`` value (a ``P:damaged`` entry, a ``P:paused`` key): when
    (Redis time), who wrote it, and what it says. Anything else, as a value set by hand, reads
    as ``(None, "", text)``."""
    stamp, _, rest = text.partition(" ")
    who, separator, what = rest.partition(": ")
    written_ms = digits_int(stamp)
    if written_ms is None or not separator:
        return None, "", text
    return written_ms, who, what


def stored_lines(value: str | None) -> list[str]:
    """Read a newline-joined field (worker ids); absent or empty reads as no lines."""
    return value.split("\n") if value else []


class Outcome(StrEnum):
    SUCCESSFUL = "successful"
    FAILED = "failed"
    RETRY = "retry"


class GuardKind(StrEnum):
    UNIQUE = "u"
    SLOT = "s"
    AWAITED_SLOT = "a"
    STEP = "w"


@dataclass(frozen=True, slots=True, kw_only=True)
class Guard:
    """What the enqueue script must claim before it stores a task (enqueue.lua header).

    UNIQUE: ``name`` is the unique digest, ``value_ms`` the window. SLOT: ``name`` is the
    schedule, ``value_ms`` the slot time; a slot at or before the last one fired is skipped,
    and one with no marker is a new schedule's first, recorded without firing. AWAITED_SLOT:
    the same, but for a slot the supervisor waited for, which fires with no marker too (the
    marker was lost: docs/schedules.md, Periodic tasks).
    STEP: nothing to claim (a step's id is fixed, and an id stored already is skipped);
    ``name`` is ``<workflow id>:<step>``, kept in the record so its end fills the outbox.
    """

    kind: GuardKind
    name: str
    value_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NewTask:
    """A task about to be stored; ``payload`` is its JSON, written once and never rewritten."""

    id: str
    payload: str
    priority: int
    run_after_ms: int | None
    guard: Guard | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Enqueued:
    """The reply of one enqueue call."""

    stored: int
    existing: dict[str, str]  # id of a unique duplicate -> id of the task holding its key


class Lease(NamedTuple):
    """One reservation of one task: the fence every later transition must present."""

    task_id: str
    queue: str
    token: str
    # What the metrics need at finish (broker/metrics.py), filled by acquire and carried along
    # to the Finish; not checked by any script. One reservation makes one Lease, so comparing
    # leases (the ack writer's and HeldLeases' keys) is unaffected.
    task_path: str = ""
    # How long a first attempt had waited when it was reserved (Redis clock; None for later
    # attempts), and when that was on the worker's clock: the wait to its start is the sum of
    # two durations, each on one clock (docs/design.md, One clock).
    waited_ms: int | None = None
    reserved_ms: int = 0


class Reservation(NamedTuple):
    """A task handed to a worker by acquire, with what is needed to rebuild its TaskResult."""

    lease: Lease
    payload: str
    workers: list[str]
    enqueued_ms: int | None
    started_ms: int | None
    errors: list[str]
    workflow: str = ""  # a workflow step's ``<workflow id>:<step>`` (its record's field)
    # A reaper put the task back after its holder's lease lapsed (reap.lua): that holder may
    # have died running it before its start notice went out, so its start is written before
    # it runs here (docs/worker.md, Leases).
    lapsed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Acquired:
    """The reply of one acquire call."""

    reservations: list[Reservation]
    next_due_ms: int | None  # ms until a delayed task is due or a rate token; None if neither
    held_back: bool = False  # a queue limit kept ready tasks back: skip until next_due or a wake
    by_rate: bool = False  # the rate held them: its next start comes at next_due, surely
    # The queue's own call failed (a key of another type), asked beside queues whose calls
    # did not: their reservations stand (Acquiring.acquire_from).
    failed: BrokerUnavailable | None = None
    # The queue is paused: it answered as an empty one, whatever it holds (a drain and a
    # --burst say so).
    paused: bool = False

    @property
    def found_work(self) -> bool:
        """Tell whether the queue had work: tasks reserved, or some due now (next_due_ms 0).

        A sharded queue answers "due now" when a shard it only peeked at holds ready tasks.
        """
        return bool(self.reservations) or self.next_due_ms == 0


class Ack(IntEnum):
    """What start.lua and finish.lua made of one item (their reply codes)."""

    STALE = 0  # another owner settled or holds the task (reaped, released, reserved again)
    RECORDED = 1
    ALREADY = 2  # this lease's outcome was recorded before: a duplicate, or a retried call
    DAMAGED = 3  # the record cannot be read: set aside (docs/lifecycle.md, Damaged records)
    OUTBOX = 4  # recorded, and a workflow step that ended: its id waits in the queue's outbox
    MISSING = 5  # no record at all: Redis lost its data, or it was deleted or expired


class Rejected[T](NamedTuple):
    """An item a start or finish call did not record, and why."""

    item: T
    ack: Ack


class Start(NamedTuple):
    """A start notice: the attempt under ``lease`` began at ``started_ms`` (worker clock)."""

    lease: Lease
    started_ms: int


class ProgressReport(NamedTuple):
    """The latest progress of the attempt under ``lease``: ``done`` of ``total`` (None: not
    known), with a note (progress.lua writes it, docs/lifecycle.md, Progress)."""

    lease: Lease
    done: int | float
    total: int | float | None
    note: str


class Finish(NamedTuple):
    """The outcome of one attempt; ``value`` is the result JSON or the error JSON."""

    lease: Lease
    outcome: Outcome
    value: str
    started_ms: int  # wall clocks, for display: an NTP step can put finished before started
    finished_ms: int
    retry_delay_ms: int = 0
    run_ms: int | None = None  # how long it ran, on the monotonic clock; None: not measured
    # A step its workflow stopped before it started, recorded FAILED with ``Cancelled``: the
    # metrics count no outcome for it, as for a cancel of a waiting task (broker/metrics.py).
    cancelled: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpiredAttempt:
    """A running attempt whose lease lapsed, reported by reap for the client to settle."""

    lease: Lease
    payload: str
    workers: list[str]
    # The lease's score: None for one written by hand that is no number of ms ("-inf").
    deadline_ms: int | None
    errors: list[str] = field(default_factory=list)
    workflow: str = ""  # a workflow step's ``<workflow id>:<step>`` (its record's field)
    # A reaper put the task back after its holder's lease lapsed (reap.lua): that holder may
    # have died running it before its start notice went out, so its start is written before
    # it runs here (docs/worker.md, Leases).
    lapsed: bool = False
    # Its record's times, in ms (None when absent): the retry policy is shown them, as a
    # worker shows them.
    enqueued_ms: int | None = None
    started_ms: int | None = None  # its first attempt's start
    attempted_ms: int | None = None  # this attempt's start; None for a first attempt


@dataclass(frozen=True, slots=True, kw_only=True)
class Reaped:
    """The reply of one reap call on one queue."""

    released: list[str]
    expired: list[ExpiredAttempt]
    # Records set aside as damaged (docs/lifecycle.md, Damaged records); in a dry run, those
    # that would be.
    set_aside: int
    # Expired lease entries the call looked at: besides those two, ghosts (no record, or one
    # already settled) and records set aside, which it dropped from the leases.
    looked_at: int
    # The reply reached its most characters of payloads and errors (REAP_CHARS) before the
    # limit of entries: more may wait.
    cut_short: bool
    # The queue's parts whose call failed, with why (a key of another type in one shard), and
    # those whose expired attempts that do not decode could not be set aside, with that call's
    # error: such a part fails as if its reap call had, its reply dropped (those attempts come
    # back next pass). The counts above are those of the other parts.
    failed_parts: dict[str, BrokerUnavailable] = field(default_factory=dict)
