"""Which task the event loop's work belongs to, for what the worker says of that work.

Each lane task sets its attempt in its own context (``attempt_of``); the asyncio task its
coroutine runs in under --task-timeout, work it starts and leaves running, and the callbacks it
schedules (``call_soon``, ``call_later``, ``add_done_callback``) all copy that context. So the
loop monitor, asyncio's error reports and the shutdown's report of work left running find the
task from whichever of them runs, failed or was left (docs/worker.md, What blocks the loop).
"""

import asyncio
import sys
from contextvars import ContextVar
from types import FrameType
from typing import Any

from ..broker import Reservation

attempt_of: ContextVar[Reservation | None] = ContextVar("threadmill_attempt_of", default=None)
_HANDLE_RUN = asyncio.Handle._run.__code__  # what runs each callback (a task's step too)


def running_attempt(
    event_loop: asyncio.AbstractEventLoop, thread_id: int | None
) -> Reservation | None:
    """Return the attempt whose work ``event_loop`` runs now in the thread ``thread_id`` (from
    another thread): its asyncio task's, or else its callback's, read from the thread's stack
    (no task is current in a callback: it was named "unknown"); None between tasks."""
    current = asyncio.current_task(event_loop)
    if current is not None:
        return current.get_context().get(attempt_of)
    frame = None if thread_id is None else sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code is _HANDLE_RUN:
            return _attempt_of_handle(frame)
        frame = frame.f_back
    return None


def raising_attempt(error: BaseException) -> Reservation | None:
    """Return the attempt whose callback or task step raised ``error`` out of the loop
    (asyncio lets ``SystemExit`` and ``KeyboardInterrupt`` out of ``run_forever``), read from
    its traceback; None if none is found there."""
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code is _HANDLE_RUN:
            return _attempt_of_handle(trace.tb_frame)
        trace = trace.tb_next
    return None


def reported_attempt(context: dict[str, Any]) -> Reservation | None:
    """Return the attempt an asyncio error report is about: a task's error comes as its
    "future", a task destroyed pending (no reference kept to it) as its "task", a callback's
    error with its "handle"; None if it names none of them."""
    source = context.get("future") or context.get("task") or context.get("handle")
    if isinstance(source, asyncio.Task | asyncio.Handle):
        return source.get_context().get(attempt_of)
    return None


def _attempt_of_handle(frame: FrameType) -> Reservation | None:
    """Return the attempt of the handle whose ``Handle._run`` ``frame`` is."""
    handle = frame.f_locals.get("self")
    return handle.get_context().get(attempt_of) if isinstance(handle, asyncio.Handle) else None
