"""Send task_enqueued for stored tasks: per call for threads, per context for an event loop.

A task_enqueued that nothing would hear (signals.heard) is not sent: Django's own receiver only
logs at DEBUG, and sending to it alone, with a quiet logger, was 3 µs of each enqueue in a
burst; for an event loop it also saves the hop to asgiref's sync thread, and the copy of each
caller's context.
"""

import asyncio
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import Context, ContextVar, copy_context
from functools import partial

from asgiref.sync import AsyncToSync, SyncToAsync, sync_to_async

from ..compat import TaskResult, TaskResultStatus, task_enqueued
from ..flags import raised
from ..observability.signals import heard, send_guarded

# Sends task_enqueued for a batch of results in one hop; returns, per result, what a receiver
# raised. None, with no hop, when nothing would hear them (signals.heard).
type Announce = Callable[[list[TaskResult]], Awaitable[list[Exception | None]] | None]

# What a context holds, by identity: each variable and the id of its value.
type ContextValues = frozenset[tuple[ContextVar[object], int]]

# How a thread pool's refusal begins once the interpreter shuts down (atexit handlers run then),
# asgiref's sync thread's included: "... after interpreter shutdown" from a pool whose thread
# never started, "... after shutdown" from one whose thread ended with the interpreter (it marks
# its pool shut down as it goes). The hop never started, so no receiver ran.
_REFUSED_AT_SHUTDOWN = "cannot schedule new futures after"

# Set while task_enqueued is sent, in the sending context: what a receiver runs (an async one
# on the caller's event loop, through async_to_sync) inherits it. Such an aenqueue announces
# its task itself (docs/enqueue.md, Coalescing).
_sending: ContextVar[bool] = ContextVar("threadmill_sending_task_enqueued", default=False)


def _fresh_sync_thread_after_fork() -> None:
    """Give asgiref a sync thread of its own in a forked child (gunicorn --preload, a
    multiprocessing pool): the parent's did not come along, but its executor, still counting
    it as idle, would queue each hop for it, and every ``aenqueue`` whose task_enqueued is
    heard would wait forever."""
    SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)


os.register_at_fork(after_in_child=_fresh_sync_thread_after_fork)


def a_thread_waits() -> bool:
    """Tell whether a sync thread waits for this call: it runs in a task_enqueued receiver,
    whose sender waits for it, or under ``async_to_sync`` (asgiref keeps the waiting thread's
    executor in ``AsyncToSync.executors``; ``_sending`` says it for receivers whatever asgiref
    keeps there). A batch's hop could queue behind that very thread (docs/enqueue.md,
    Coalescing)."""
    return _sending.get() or getattr(AsyncToSync.executors, "current", None) is not None


def caller_context() -> Context | None:
    """Return a copy of the caller's context to announce its task from, or None when nothing
    would hear task_enqueued (signals.heard): a burst nobody hears copies nothing."""
    return copy_context() if heard(task_enqueued, TaskResultStatus.READY) else None


def values_of(context: Context) -> ContextValues:
    """Name what ``context`` holds, by identity. Contexts that hold the same object in every
    variable (copies: the tasks of one ``gather``) announce alike, asgiref's Locals included,
    so their callers share one hop (docs/enqueue.md, Coalescing)."""
    return frozenset((var, id(value)) for var, value in context.items())


def announcer(sender: type) -> Announce:
    """Return how an event loop announces a batch: task_enqueued for each result, in one hop
    to a sync thread, and no hop when nothing would hear it (signals.heard)."""
    hop = sync_to_async(partial(announce_each, sender))

    async def hop_or_inline(
        results: list[TaskResult], afresh: bool = False
    ) -> list[Exception | None]:
        try:
            return await hop(results)
        except RuntimeError as refused:
            if _REFUSED_AT_SHUTDOWN not in str(refused):
                if afresh:
                    raise
                # asgiref refused before any receiver ran: the sync thread this context
                # hops to waits no more (its async_to_sync returned, a call it started and
                # left running). A fresh context hops to one that takes work.
                fresh = hop_or_inline(results, afresh=True)
                return await asyncio.get_running_loop().create_task(fresh, context=Context())
        # An atexit handler's aenqueue: the receivers run in this thread instead, what they
        # raise logged, since the tasks are stored: raised, it would read as not stored, and
        # be enqueued again (docs/enqueue.md, Coalescing).
        announce_guarded(sender, results)
        return [None] * len(results)

    def announce_batch(results: list[TaskResult]) -> Awaitable[list[Exception | None]] | None:
        if not heard(task_enqueued, TaskResultStatus.READY):  # a new task is READY
            return None
        return hop_or_inline(results)

    return announce_batch


def announce_each(sender: type, results: list[TaskResult]) -> list[Exception | None]:
    """Send task_enqueued for each of ``results``; return what a receiver raised, per result."""
    errors: list[Exception | None] = []
    with raised(_sending):
        for result in results:
            try:
                task_enqueued.send(sender, task_result=result)
            except Exception as exc:  # that caller's own error, as Signal.send would raise it
                errors.append(exc)
            else:
                errors.append(None)
    return errors


def announce_all(sender: type, results: list[TaskResult]) -> None:
    """Send task_enqueued for each of the new ``results``, unless nothing would hear it; then
    raise the first error a receiver raised. Each task is stored and will run, so one failing
    receiver must not keep the others' task_enqueued from being sent."""
    if results and heard(task_enqueued, TaskResultStatus.READY):  # a new task is READY
        for error in announce_each(sender, results):
            if error is not None:
                raise error


def announce_guarded(sender: type, results: list[TaskResult]) -> None:
    """Send task_enqueued for each of ``results`` to every receiver, logging what one raises:
    the caller raises an error of its own, which says what was written (``PartlyEnqueued``),
    or has nobody to raise it to (a commit, the scheduler), or must not raise it (an
    ``aenqueue`` at interpreter shutdown, its task stored)."""
    with raised(_sending):
        for result in results:
            send_guarded(task_enqueued, sender, result)
