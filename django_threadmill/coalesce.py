"""Coalesced enqueue: concurrent calls in one process or one event loop share round trips.

The ack writer's rule in reverse (DESIGN.md §10, issue 11): whoever finds the line free sends
everything waiting, one enqueue script call per queue in one pipeline; the others wait for their
own outcome. No timer, so a lone call on an idle process is sent at once, in one round trip.
"""

import asyncio
import copy
import logging
import os
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from threading import Lock
from typing import Any
from weakref import WeakKeyDictionary, WeakSet

from .broker import Broker, NewTask
from .compat import TaskResult
from .exceptions import BrokerUnavailable

logger = logging.getLogger(__name__)

type Outcomes = list[int | BrokerUnavailable]
type Groups = Mapping[str, Sequence[NewTask]]
# Sends task_enqueued for stored results; returns, per result, what a receiver raised.
type Announce = Callable[[list[TaskResult]], Awaitable[list[Exception | None]]]


@dataclass(slots=True, eq=False, kw_only=True)
class Pending:
    """One caller's task on the line, and its outcome once its batch was sent."""

    queue: str
    task: NewTask
    error: BaseException | None = None
    settled: bool = False


class Latch:
    """A one-shot wake-up for one waiting thread: a lock taken at birth, released to wake.

    Cheaper than ``threading.Event`` (a condition, a lock, and a lock per wait), which counts
    when 64 threads are each woken once per batch (DESIGN.md §10, threads must not cost).
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = Lock()
        self._lock.acquire()

    def wait(self) -> None:
        self._lock.acquire()

    def open(self) -> None:
        self._lock.release()


@dataclass(slots=True, eq=False, kw_only=True)
class Waiter(Pending):
    """A thread's pending call, with the latch that wakes it."""

    sender: bool = False  # handed the line: this thread sends the next batch
    woken: Latch = field(default_factory=Latch)


@dataclass(slots=True, eq=False, kw_only=True)
class Announced(Pending):
    """An event loop's pending call, with the result the flusher announces once stored."""

    result: TaskResult


_lines: WeakSet["Line[Any]"] = WeakSet()


def _reset_lines_after_fork() -> None:
    """Free every line in a forked child: the threads that were sending did not come along,
    and a line left busy would make each enqueue of the child wait forever (the worker's
    supervisor forks its processes)."""
    for line in _lines:
        line.reset()


os.register_at_fork(after_in_child=_reset_lines_after_fork)


class Line[P: Pending]:
    """The calls waiting to be sent and whether a batch is in flight."""

    def __init__(self) -> None:
        self.reset()
        _lines.add(self)

    def reset(self) -> None:
        """Start empty and free, with a fresh lock."""
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


def _grouped[P: Pending](batch: list[P]) -> dict[str, list[P]]:
    groups: dict[str, list[P]] = defaultdict(list)
    for pending in batch:
        groups[pending.queue].append(pending)
    return groups


def _own(error: BaseException, shared: bool) -> BaseException:
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


def _settle(
    groups: Mapping[str, Sequence[Pending]], outcomes: Sequence[int | BaseException]
) -> None:
    shared = sum(len(group) for group in groups.values()) > 1
    for group, outcome in zip(groups.values(), outcomes, strict=True):
        for pending in group:
            if isinstance(outcome, BaseException):
                pending.error = _own(outcome, shared)
            pending.settled = True


def _tasks(groups: Mapping[str, Sequence[Pending]]) -> dict[str, list[NewTask]]:
    return {queue: [pending.task for pending in group] for queue, group in groups.items()}


@contextmanager
def _settling(
    groups: Mapping[str, Sequence[Pending]],
) -> Iterator[Callable[[Sequence[int | BaseException]], None]]:
    """Settle every caller of a batch: with the per-queue outcomes the block passes, with the
    error that lost the whole round trip, or as interrupted if the sender was stopped."""
    try:
        yield lambda outcomes: _settle(groups, outcomes)
    except Exception as exc:
        _settle(groups, [exc] * len(groups))
    finally:
        if not all(pending.settled for group in groups.values() for pending in group):
            _interrupt(groups)


def _interrupt(groups: Mapping[str, Sequence[Pending]]) -> None:
    """Settle a batch whose sender was stopped before it knew the outcome."""
    error = BrokerUnavailable(
        "The enqueue call that carried this task was interrupted (KeyboardInterrupt, or its "
        "event loop shutting down); it may have been applied before it stopped."
    )
    _settle(groups, [error] * len(groups))


class ThreadCoalescer:
    """Coalesce ``enqueue`` calls from the threads of one process."""

    def __init__(self, send: Callable[[Groups], Outcomes]) -> None:
        self._send = send
        self._line: Line[Waiter] = Line()

    def enqueue(self, queue: str, task: NewTask) -> None:
        """Store ``task``, alone or with the calls waiting beside it; raise its own error."""
        waiter = Waiter(queue=queue, task=task)
        if self._line.join(waiter):
            self._send_batch(waiter)
        else:
            waiter.woken.wait()  # bounded: the sender's call is bounded by the pool and socket
            if waiter.sender:
                self._send_batch(waiter)
        if waiter.error is not None:
            raise waiter.error

    def _send_batch(self, sender: Waiter) -> None:
        """Send what is waiting (``sender``'s own call among it), then wake every other caller
        of the batch and hand the line to the first caller that arrived meanwhile."""
        groups = _grouped(self._line.take())
        try:
            with _settling(groups) as settle:
                settle(self._send(_tasks(groups)))
        finally:
            following = self._line.release()
            if following is not None:
                following.sender = True
                following.woken.open()
            for group in groups.values():
                for waiter in group:
                    if waiter is not sender:
                        waiter.woken.open()


class LoopCoalescer:
    """Coalesce ``aenqueue`` calls of one event loop, and their task_enqueued signals.

    A flusher task sends the batches, so a caller cancelled while waiting (a dropped request)
    never cancels a call that carries other callers' tasks. It also announces each batch in
    one hop to a sync thread: ``Signal.asend`` per call costs one hop each, and 10,000 of them
    queue behind one another on asgiref's single sync thread (issue 11).
    """

    def __init__(self, send: Callable[[Groups], Awaitable[Outcomes]], announce: Announce) -> None:
        self._send = send
        self._announce = announce
        self._line: Line[Announced] = Line()
        self._futures: dict[Announced, asyncio.Future[None]] = {}
        # A strong reference to the running flusher: the event loop keeps only weak ones.
        self._flusher: asyncio.Task[None] | None = None

    async def aenqueue(self, queue: str, task: NewTask, result: TaskResult) -> None:
        """Store and announce ``task``, alone or with the calls waiting beside it."""
        pending = Announced(queue=queue, task=task, result=result)
        future = asyncio.get_running_loop().create_future()
        self._futures[pending] = future
        if self._line.join(pending):
            self._flusher = asyncio.create_task(self._flush(), name="threadmill-enqueue")
            self._flusher.add_done_callback(self._flusher_done)
        await future

    async def _flush(self) -> None:
        """Send batches until nobody waits."""
        while True:
            await self._send_batch(self._line.take())
            if self._line.release() is None:
                return

    def _flusher_done(self, flusher: asyncio.Task[None]) -> None:
        """Fail whoever still waits if the flusher was stopped (its loop shutting down),
        even before it ran, and free the line for the next caller."""
        if not flusher.cancelled() and flusher.exception() is None:
            return
        if not flusher.cancelled():
            logger.error("Enqueue flusher failed", exc_info=flusher.exception())
        leftover = self._line.take()
        _interrupt(_grouped(leftover))
        for pending in leftover:
            self._resolve(pending)
        self._line.release()

    async def _send_batch(self, batch: list[Announced]) -> None:
        groups = _grouped(batch)
        try:
            with _settling(groups) as settle:
                settle(await self._send(_tasks(groups)))
            await self._announce_stored(groups)
        finally:
            for pending in batch:
                self._resolve(pending)

    async def _announce_stored(self, groups: Mapping[str, Sequence[Announced]]) -> None:
        stored = [pending for group in groups.values() for pending in group if not pending.error]
        if not stored:
            return
        errors: Sequence[Exception | None]
        try:
            errors = await self._announce([pending.result for pending in stored])
        except Exception as exc:  # the hop itself failed: the tasks are stored, the signal not
            errors = [_own(exc, len(stored) > 1) for _ in stored]
        for pending, error in zip(stored, errors, strict=True):
            pending.error = error

    def _resolve(self, pending: Announced) -> None:
        future = self._futures.pop(pending)
        if future.done():  # its caller was cancelled; the task was sent all the same
            return
        if pending.error is None:
            future.set_result(None)
        else:
            future.set_exception(pending.error)


class Enqueuer:
    """The coalescers of one broker: one for the process's threads, one per event loop."""

    def __init__(self, broker: Broker, announce: Announce) -> None:
        self.broker = broker
        self._announce = announce
        self._threads = ThreadCoalescer(broker.enqueue_groups)
        self._loops: WeakKeyDictionary[asyncio.AbstractEventLoop, LoopCoalescer] = (
            WeakKeyDictionary()
        )

    def enqueue(self, queue: str, task: NewTask) -> None:
        """Store one task in ``queue``, sharing a round trip with concurrent callers."""
        self._threads.enqueue(queue, task)

    async def aenqueue(self, queue: str, task: NewTask, result: TaskResult) -> None:
        """Store and announce one task, coalesced within the running event loop."""
        loop = asyncio.get_running_loop()
        coalescer = self._loops.get(loop)
        if coalescer is None:
            coalescer = LoopCoalescer(self.broker.aenqueue_groups, self._announce)
            self._loops[loop] = coalescer
        await coalescer.aenqueue(queue, task, result)
