"""Send task_enqueued for stored tasks: per call for threads, per batch for an event loop.

A task_enqueued that nothing would hear (signals.heard) is not sent: Django's own receiver only
logs at DEBUG, and sending to it alone, with a quiet logger, was 3 µs of each enqueue in a
burst; for an event loop it also saves the hop to asgiref's sync thread.
"""

from collections.abc import Awaitable, Callable
from functools import partial

from asgiref.sync import sync_to_async

from ..compat import TaskResult, TaskResultStatus, task_enqueued
from ..observability.signals import heard


def announcer(sender: type) -> Callable[[list[TaskResult]], Awaitable[list[Exception | None]]]:
    """Return how an event loop announces a batch: task_enqueued for each result, in one hop
    to a sync thread, and no hop when nothing would hear it (signals.heard)."""
    hop = sync_to_async(partial(announce_each, sender))

    async def announce_batch(results: list[TaskResult]) -> list[Exception | None]:
        if not heard(task_enqueued, TaskResultStatus.READY):  # a new task is READY
            return [None] * len(results)
        return await hop(results)

    return announce_batch


def announce_each(sender: type, results: list[TaskResult]) -> list[Exception | None]:
    """Send task_enqueued for each of ``results``; return what a receiver raised, per result."""
    errors: list[Exception | None] = []
    for result in results:
        try:
            task_enqueued.send(sender, task_result=result)
        except Exception as exc:  # that caller's own error, as Signal.send would raise it
            errors.append(exc)
        else:
            errors.append(None)
    return errors


def announce(sender: type, result: TaskResult) -> None:
    """Send task_enqueued for ``result``, unless nothing would hear it (signals.heard)."""
    if heard(task_enqueued, result.status):
        task_enqueued.send(sender, task_result=result)
