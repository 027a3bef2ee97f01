"""The batching core shared by the thread and event-loop coalescers (docs/enqueue.md, Coalescing).

A line holds the calls waiting to be sent and whether a batch is in flight; the helpers group a
batch by queue and give each caller its own outcome. No I/O and no waiting happens here.
"""

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from threading import Lock

from ..broker import Enqueued, NewTask
from ..exceptions import BrokerUnavailable, MaybeApplied, PartlyEnqueued
from ..forks import renew_after_fork


@dataclass(slots=True, eq=False, kw_only=True)
class Pending:
    """One caller's task on the line, and its outcome once its batch was sent."""

    queue: str
    task: NewTask
    error: BaseException | None = None
    settled: bool = False
    holder: str | None = None  # a unique duplicate: the id of the unfinished task it equals


class Latch:
    """A one-shot wake-up for one waiting thread: a lock taken at birth, released to wake.

    Cheaper than ``threading.Event`` (a condition, a lock, and a lock per wait), which counts
    when 64 threads are each woken once per batch.
    """

    __slots__ = ("_lock", "_open")

    def __init__(self) -> None:
        self._lock = Lock()
        self._lock.acquire()
        self._open = False

    def wait(self) -> BaseException | None:
        """Block until opened; return, not raise, an interrupt that came meanwhile.

        A woken caller may have been handed a duty (send the next batch, wake the next
        caller) that others wait on, so the interrupt (KeyboardInterrupt in the main thread)
        is raised by the caller once that is done: at most one round trip later.
        """
        interrupted: BaseException | None = None
        while True:
            try:
                while not self._open:  # set before the release: a wait interrupted after its
                    self._lock.acquire()  # acquire succeeded does not block again
                return interrupted
            except BaseException as exc:
                interrupted = exc

    def open(self) -> None:
        self._open = True
        self._lock.release()


class Line[P: Pending]:
    """The calls waiting to be sent and whether a batch is in flight."""

    def __init__(self) -> None:
        self.after_fork()
        renew_after_fork(self)

    def after_fork(self) -> None:
        """Start empty and free, with a fresh lock: in a forked child too, where the threads
        that were sending did not come along, and a line left busy would make each enqueue
        wait forever."""
        self._lock = Lock()  # threads join while the sender takes; uncontended in a loop
        self._waiting: list[P] = []
        self._busy = False

    def join(self, pending: P) -> bool:
        """Queue ``pending``; return True if the line was free, so the caller must send."""
        with self._lock:
            self._waiting.append(pending)
            if self._busy:
                return False
            self._busy = True
            return True

    def take(self) -> list[P]:
        """Return everything waiting, as the next batch."""
        with self._lock:
            batch, self._waiting = self._waiting, []
            return batch

    def release(self) -> P | None:
        """End a batch: return the first waiter, which keeps the line busy, or free the line."""
        with self._lock:
            if self._waiting:
                return self._waiting[0]
            self._busy = False
            return None


def grouped[P: Pending](batch: Iterable[P]) -> dict[str, list[P]]:
    """Group a batch by queue: each queue is its own script call (its own hash tag)."""
    groups: dict[str, list[P]] = defaultdict(list)
    for pending in batch:
        groups[pending.queue].append(pending)
    return groups


def own_error[E: BaseException](error: E, shared: bool) -> E:
    """Give each caller of a batch its own exception object: one raised in many threads or
    tasks at once would collect all their tracebacks."""
    if not shared:
        return error
    try:
        own = copy.copy(error)
    except Exception:  # an exception class whose __init__ cannot be replayed from its args
        return error
    own.__cause__ = error.__cause__
    return own


def settle(
    groups: Mapping[str, Sequence[Pending]], outcomes: Sequence[Enqueued | BaseException]
) -> None:
    """Record each queue's outcome (what was stored, or an error) on its callers."""
    shared = sum(len(group) for group in groups.values()) > 1
    for group, outcome in zip(groups.values(), outcomes, strict=True):
        for pending in group:
            own = outcome
            if isinstance(outcome, PartlyEnqueued):
                own = _own_part(outcome, pending.task.id)
            if isinstance(own, MaybeApplied):
                pending.error = maybe_stored(own, [pending.task.id])
            elif isinstance(own, BaseException):
                pending.error = own_error(own, shared)
            else:
                pending.holder = own.existing.get(pending.task.id)
            pending.settled = True


def _own_part(error: PartlyEnqueued, task_id: str) -> Enqueued | BrokerUnavailable:
    """Return the outcome of the shard call that carried ``task_id``: what the caller of that
    one task would have met alone. The batch's ``PartlyEnqueued`` counts other callers' tasks,
    and its caller has no id of its own to look for in ``.written``."""
    if task_id in error.written:  # its own shard stored it, or found the unique task it equals
        return Enqueued(stored=1, existing=error.existing)
    return error.errors.get(task_id, error)


def maybe_stored(error: MaybeApplied, task_ids: Sequence[str]) -> MaybeApplied:
    """Return ``error`` for the caller of ``task_ids``: naming them, and what to check before
    enqueuing again, since the retry of an enqueue is a new task, with a new id."""
    if len(task_ids) == 1:
        [task_id] = task_ids
        advice = (
            f"Task {task_id!r} may be stored: check get_result({task_id!r}) before enqueuing "
            "it again, since a new enqueue is a new task."
        )
    else:
        advice = (
            f"The {len(task_ids)} tasks of this call may be stored (their ids are in this error's "
            ".task_ids): check get_result(id) before enqueuing them again, since a new "
            "enqueue makes new tasks."
        )
    own = MaybeApplied(f"{error} {advice}", tuple(task_ids))
    own.__cause__ = error.__cause__
    return own


def tasks_by_queue(groups: Mapping[str, Sequence[Pending]]) -> dict[str, list[NewTask]]:
    """Return what the broker stores for a grouped batch."""
    return {queue: [pending.task for pending in group] for queue, group in groups.items()}


@contextmanager
def settling(
    groups: Mapping[str, Sequence[Pending]],
) -> Iterator[Callable[[Sequence[Enqueued | BaseException]], None]]:
    """Settle every caller of a batch: with the per-queue outcomes the block passes, with the
    error that lost the whole round trip, or as interrupted if the sender was stopped."""
    try:
        yield lambda outcomes: settle(groups, outcomes)
    except Exception as exc:
        settle(groups, [exc] * len(groups))
    finally:
        if not all(pending.settled for group in groups.values() for pending in group):
            interrupt(groups)


def interrupt(groups: Mapping[str, Sequence[Pending]]) -> None:
    """Settle a batch whose sender was stopped before it knew the outcome."""
    error = MaybeApplied(
        "The enqueue call that carried this task was interrupted (KeyboardInterrupt, or its "
        "event loop shutting down); it may have been applied before it stopped."
    )
    settle(groups, [error] * len(groups))
