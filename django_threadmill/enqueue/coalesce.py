"""Coalesced enqueue: concurrent calls in one process or one event loop share round trips.

The ack writer's rule in reverse (docs/enqueue.md, Coalescing): whoever finds the line free sends
everything waiting, one enqueue script call per queue in one pipeline; the others wait for their
own outcome. No timer, so a lone call on an idle process is sent at once, in one round trip.
"""

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import Context
from dataclasses import dataclass, field
from itertools import pairwise

from ..broker import Broker, Enqueued, NewTask
from ..broker.per_loop import PerLoop
from ..compat import TaskResult
from ..exceptions import BrokerUnavailable
from .announce import Announce, ContextValues, a_thread_waits, caller_context, values_of
from .batching import Latch, Line, Pending, grouped, interrupt, own_error, settling, tasks_by_queue

logger = logging.getLogger(__name__)

# Most tasks per script call of one event loop's batch: about 8 ms of Redis time.
CHUNK_TASKS = 1000

type Outcomes = list[Enqueued | BrokerUnavailable]
type Groups = Mapping[str, Sequence[NewTask]]


@dataclass(slots=True, eq=False, kw_only=True)
class Waiter(Pending):
    """A thread's pending call, with the latch that wakes it and what it does once woken."""

    sender: bool = False  # handed the line: this thread sends the next batch
    next: "Waiter | None" = None  # the caller of the same batch this one wakes in turn
    woken: Latch = field(default_factory=Latch)


@dataclass(slots=True, eq=False, kw_only=True)
class Announced(Pending):
    """An event loop's pending call: the result announced once stored, and the future its
    caller awaits."""

    result: TaskResult
    future: asyncio.Future[str | None]
    by_caller: bool = False  # a sync thread waits for its caller, which announces it
    context: Context | None = None  # a copy of its caller's, to announce from, if heard


class ThreadCoalescer:
    """Coalesce ``enqueue`` calls from the threads of one process."""

    def __init__(self, send: Callable[[Groups], Outcomes]) -> None:
        self._send = send
        self._line: Line[Waiter] = Line()
        self._in_line = threading.local()  # .joined: this thread has a call on the line

    def enqueue(self, queue: str, task: NewTask) -> str | None:
        """Store ``task``, alone or with the calls waiting beside it; raise its own error.

        Return the id of the unfinished task a unique ``task`` duplicates, or None. A call made
        while its thread is itself on the line (by a signal handler or a finaliser that runs
        in the middle of an enqueue) is sent alone: the line waits on that very thread, so
        joining it would wait forever (docs/enqueue.md, Coalescing).
        """
        waiter = Waiter(queue=queue, task=task)
        if getattr(self._in_line, "joined", False):
            self._store(grouped([waiter]))
        else:
            self._in_line.joined = True
            try:
                self._wait_in_line(waiter)
            finally:
                self._in_line.joined = False
        if waiter.error is not None:
            raise waiter.error
        return waiter.holder

    def _wait_in_line(self, waiter: Waiter) -> None:
        """Join the line with ``waiter``; send its batch, or wait until another caller did."""
        if self._line.join(waiter):
            self._send_batch(waiter)
        else:
            # Bounded: the sender's call is bounded by the pool and socket timeouts.
            interrupted = waiter.woken.wait()
            if waiter.next is not None:  # first: the rest of the batch waits on it
                waiter.next.woken.open()
            if waiter.sender:
                self._send_batch(waiter)
            if interrupted is not None:
                raise interrupted

    def _store(self, groups: Mapping[str, Sequence[Waiter]]) -> None:
        """Send a grouped batch and settle each of its callers."""
        with settling(groups) as settle:
            settle(self._send(tasks_by_queue(groups)))

    def _send_batch(self, sender: Waiter) -> None:
        """Send what is waiting (``sender``'s own call among it), then wake the other callers
        of the batch one after another, and, among them, the caller the line is handed to:
        the first that arrived meanwhile, which sends the next batch."""
        groups = grouped(self._line.take())
        try:
            self._store(groups)
        finally:
            following = self._line.release()
            woken = [waiter for group in groups.values() for waiter in group]
            woken.remove(sender)
            if following is not None:
                following.sender = True
                # Woken first, the next sender would send only the few callers that arrived
                # during this round trip; woken last, nobody would work while its batch is in
                # Redis. Measured with 64 threads on 2 cores: first 10,900 tasks/s
                # (15 per batch), last 12,600, three quarters of the way 13,100.
                woken.insert(len(woken) * 3 // 4, following)
            wake_in_turn(woken)


def wake_in_turn(waiters: list[Waiter]) -> None:
    """Wake the first of ``waiters``; each, once woken, wakes the next before anything else.

    Woken at once, they would all fight for the GIL at once: with 64 threads on 2 cores that
    was four context switches per call instead of one or two, and 8,000-8,600 tasks/s against
    13,400-13,900 in the same run. One at a time, each takes the GIL as the one
    before blocks again.
    """
    for waiter, following in pairwise(waiters):
        waiter.next = following
    if waiters:
        waiters[0].woken.open()


class LoopCoalescer:
    """Coalesce ``aenqueue`` calls of one event loop, and their task_enqueued signals.

    A flusher task sends the batches, so a caller cancelled while waiting (a dropped request)
    never cancels a call that carries other callers' tasks. Each batch it stored is announced
    in one hop to a sync thread per group of callers whose contexts hold the same values
    (``Signal.asend`` per call costs one hop each, and 10,000 of them queue behind one another
    on asgiref's single sync thread), by a task of its own started in that context: receivers
    see their own caller's context variables and asgiref Locals, as for a lone call. The line
    is free meanwhile, so a receiver that enqueues is not left waiting for a batch that waits
    for it (docs/enqueue.md, Coalescing).
    """

    def __init__(self, send: Callable[[Groups], Awaitable[Outcomes]], announce: Announce) -> None:
        self._send = send
        self._announce = announce
        self._line: Line[Announced] = Line()
        # Strong references to the running flusher and announcers: the loop keeps weak ones.
        self._flusher: asyncio.Task[None] | None = None
        self._announcers: set[asyncio.Task[None]] = set()

    def aenqueue(
        self, loop: asyncio.AbstractEventLoop, queue: str, task: NewTask, result: TaskResult
    ) -> Awaitable[str | None]:
        """Store and announce ``task``, alone or with the calls waiting beside it.

        Return an awaitable of the id of the unfinished task a unique ``task`` duplicates (then
        nothing was stored or announced), or None. A plain function returning a future, not a
        coroutine: 10,000 waiting calls are 10,000 fewer objects for the garbage collector to
        walk. Only a call a sync thread waits for (made in a task_enqueued receiver, or under
        ``async_to_sync``) gets a coroutine, which announces its task itself.
        """
        by_caller = a_thread_waits()
        pending = Announced(
            queue=queue,
            task=task,
            result=result,
            future=loop.create_future(),
            by_caller=by_caller,
            context=None if by_caller else caller_context(),
        )
        if self._line.join(pending):
            self._flusher = loop.create_task(self._flush(), name="threadmill-enqueue")
            self._flusher.add_done_callback(self._flusher_done)
        return self._announced_by_caller(pending) if pending.by_caller else pending.future

    async def _announced_by_caller(self, pending: Announced) -> str | None:
        """Wait until ``pending`` is stored, then announce it from the caller's own context.

        A sync thread waits for the caller (a task_enqueued receiver's sending thread, or the
        thread in ``async_to_sync``): a hop from the flusher's context could queue behind that
        very thread, and the batch's other callers with it, for good; one from the caller's
        reaches it (asgiref runs it there while it waits), as ``Signal.asend`` would.
        """
        holder = await pending.future
        if holder is not None:
            return holder
        [error] = await self._hop([pending.result])
        if error is not None:
            raise error
        return holder

    async def _hop(self, results: list[TaskResult]) -> list[Exception | None]:
        hop = self._announce(results)
        return [None] * len(results) if hop is None else await hop

    async def _flush(self) -> None:
        """Send batches until nobody waits; a big one as several calls at once."""
        while True:
            batch = self._line.take()
            if len(batch) <= CHUNK_TASKS:
                await self._send_batch(batch)
            else:
                # Each call is answered while Redis still runs the next, so its callers
                # resume meanwhile; and no single script holds Redis for long.
                chunks = range(0, len(batch), CHUNK_TASKS)
                await asyncio.gather(
                    *(self._send_batch(batch[start : start + CHUNK_TASKS]) for start in chunks)
                )
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
        interrupt(grouped(leftover))
        for pending in leftover:
            self._resolve(pending)
        self._line.release()

    async def _send_batch(self, batch: list[Announced]) -> None:
        groups = grouped(batch)
        try:
            with settling(groups) as settle:
                settle(await self._send(tasks_by_queue(groups)))
        finally:
            self._announce_then_resolve(batch)

    def _announce_then_resolve(self, batch: list[Announced]) -> None:
        """Resolve the callers of a sent batch: at once, but those whose task was stored once
        it is announced, by callers holding the same context values together."""
        alike: dict[ContextValues | None, list[Announced]] = {}
        for pending in batch:
            if pending.error is None and pending.holder is None and not pending.by_caller:
                key = None if pending.context is None else values_of(pending.context)
                alike.setdefault(key, []).append(pending)
            else:
                self._resolve(pending)
        for stored in alike.values():
            self._announce_alike(stored)

    def _announce_alike(self, stored: list[Announced]) -> None:
        """Announce ``stored`` in one hop, from a task of its own that the flusher does not
        wait for, started in their callers' context (the flusher's if none was copied), then
        resolve them."""
        hop = self._announce([pending.result for pending in stored])
        if hop is None:
            for pending in stored:
                self._resolve(pending)
            return
        announcer = asyncio.get_running_loop().create_task(
            self._resolve_once_announced(stored, hop),
            name="threadmill-announce",
            context=stored[0].context,
        )
        self._announcers.add(announcer)
        announcer.add_done_callback(self._announcers.discard)

    async def _resolve_once_announced(
        self, stored: list[Announced], hop: Awaitable[list[Exception | None]]
    ) -> None:
        errors: Sequence[Exception | None] = [None] * len(stored)
        try:
            errors = await hop
        except Exception as exc:  # the hop itself failed: the tasks are stored, the signal not
            errors = [own_error(exc, len(stored) > 1) for _ in stored]
        finally:  # cancelled (the loop shutting down): the tasks are stored all the same
            for pending, error in zip(stored, errors, strict=True):
                pending.error = error
                self._resolve(pending)

    def _resolve(self, pending: Announced) -> None:
        future = pending.future
        if future.done():  # its caller was cancelled; the task was sent all the same
            return
        if pending.error is None:
            future.set_result(pending.holder)
        else:
            future.set_exception(pending.error)


class Enqueuer:
    """The coalescers of one broker: one for the process's threads, one per event loop."""

    def __init__(self, broker: Broker, announce: Announce) -> None:
        self._threads = ThreadCoalescer(broker.enqueue_groups)
        self._loops = PerLoop(lambda: LoopCoalescer(broker.aenqueue_groups, announce))

    def enqueue(self, queue: str, task: NewTask) -> str | None:
        """Store one task in ``queue``, sharing a round trip with concurrent callers; return
        the id of the unfinished task a unique one duplicates, or None."""
        return self._threads.enqueue(queue, task)

    def aenqueue(self, queue: str, task: NewTask, result: TaskResult) -> Awaitable[str | None]:
        """Store and announce one task, coalesced within the running event loop; return an
        awaitable of what ``enqueue`` returns."""
        return self._loops.get().aenqueue(asyncio.get_running_loop(), queue, task, result)
