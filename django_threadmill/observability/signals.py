"""Send django.tasks' signals so that a failing receiver can never kill the sender's thread.

A signal whose only receiver is Django's own log line, at a level its logger does not print,
is not sent: that send can have no effect, and it cost a worker about 8 µs per task, a sixth
of its thread's time on an echo task. Any other receiver, or a logger that prints the line,
and the signal is sent as Django's ImmediateBackend sends it. Callers ask ``heard`` first, so
that nothing is built for a signal nobody hears (the worker builds no ``TaskResult`` then).
A sender that logged the outcome itself (the reaper) sends inside ``said_already``, so that
Django's own line does not say it a second time. A receiver that raises is logged once, here,
with the task's id: ``send_robust`` logs it too (on ``django.dispatch``), and that line, which
names no task, is held back during our sends (docs/observability.md, Signals).
"""

import asyncio
import logging
import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from functools import partial
from types import SimpleNamespace
from typing import Any

from asgiref.sync import sync_to_async

from ..compat import (
    ASEND_SHOWS_EXCEPTION,
    TASK_LOG_RECEIVERS,
    TASKS_LOGGER_NAME,
    TaskResult,
    TaskResultStatus,
    task_enqueued,
    task_finished,
    task_started,
)
from ..flags import raised

logger = logging.getLogger(__name__)
_tasks_logger = logging.getLogger(TASKS_LOGGER_NAME)
# How Django's dispatcher keys a function receiver: by id() (django.dispatch._make_id).
_LOG_RECEIVER_IDS = frozenset(id(receiver) for receiver in TASK_LOG_RECEIVERS)
_SIGNAL_NAMES = {
    task_enqueued: "task_enqueued",
    task_started: "task_started",
    task_finished: "task_finished",
}
_said = ContextVar("threadmill_said_already", default=False)
# Set by drain() (django_threadmill.testing) around its tasks: what is no Exception that a
# receiver raises (Ctrl-C, a test framework's timeout) stops the drain, as it does from a task.
_interrupts_raised = ContextVar("threadmill_receiver_interrupts_raised", default=False)
_dispatch_logger = logging.getLogger("django.dispatch")
# Inside a guarded send: what django.dispatch logged meanwhile, held back until the send ends.
_held: ContextVar[list[logging.LogRecord] | None] = ContextVar(
    "threadmill_dispatch_lines_held", default=None
)


class _NotSaidAlready(logging.Filter):
    """Drop the task lines of Django's receivers inside ``said_already``, in that context only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _said.get()


class _NoEmptyTraceback(logging.Filter):
    """Drop the exception of a record logged with none being handled: the backport's receiver
    logs a failure with ``logger.exception``, and a ``task_finished`` sent with no exception
    being handled (a task the watchdog ended) printed ``NoneType: None`` as its traceback,
    where Django 6's line has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is not None and record.exc_info[0] is None:
            record.exc_info = None
        return True


class _HeldDuringSends(logging.Filter):
    """Hold back django.dispatch's lines logged inside a guarded send, in that context only."""

    def filter(self, record: logging.LogRecord) -> bool:
        held = _held.get()
        if held is None:
            return True
        held.append(record)
        return False


_tasks_logger.addFilter(_NotSaidAlready())
_tasks_logger.addFilter(_NoEmptyTraceback())
_dispatch_logger.addFilter(_HeldDuringSends())


def _failures_named(signal: Any) -> None:
    """Let ``signal``'s ``send_robust`` log a failing receiver that is no function (a callable
    object, a ``functools.partial``): Django's line reads the receiver's ``__qualname__``, and
    the AttributeError of one without it ended the send there, the receivers after it never
    called (docs/observability.md, Signals). Django's line then names it as ``_name_of`` does.
    """
    log_failure = getattr(signal, "_log_robust_failure", None)
    if log_failure is None:  # a Django that logs these failures otherwise
        return

    def logged(receiver: Any, err: Exception) -> None:
        if not hasattr(receiver, "__qualname__"):
            receiver = SimpleNamespace(__qualname__=_name_of(receiver))
        log_failure(receiver, err)

    signal._log_robust_failure = logged


for _signal in _SIGNAL_NAMES:
    _failures_named(_signal)


def said_already() -> AbstractContextManager[None]:
    """Send signals in the block without Django's log line about the task: the sender logged
    the outcome itself. Every receiver is still sent to; other threads are not affected."""
    return raised(_said)


def interrupts_raised() -> AbstractContextManager[None]:
    """Raise to the sender, in the block, an interrupt a receiver raises (what is no
    ``Exception``, but a receiver's own ``CancelledError``): the caller asked to be stopped by
    it, and a guarded send must not log it as the receiver's failure and go on."""
    return raised(_interrupts_raised)


def _an_interrupt(failure: BaseException) -> bool:
    """Tell whether ``failure`` stops the sender (``interrupts_raised``)."""
    return _interrupts_raised.get() and not isinstance(failure, Exception | asyncio.CancelledError)


def send_guarded(signal: Any, sender: type, result: TaskResult) -> None:
    """Send a django.tasks signal; a failing receiver is logged, never raised.

    ``send_robust`` catches a receiver's ``Exception`` only, and a receiver that logs the
    task's exception can fail in logging's own error handling (an exception that cannot be
    formatted): whatever gets out is logged by its type alone, so it cannot fail again.
    """
    if heard(signal, result.status):
        with _failures_logged(signal, result) as responses:
            try:
                responses += signal.send_robust(sender, task_result=result)
            except BaseException as failure:  # the caller is a worker thread: it must go on
                if _an_interrupt(failure):
                    raise
                _log_undelivered(result, failure)


async def asend_guarded(signal: Any, sender: type, result: TaskResult) -> None:
    """Async twin of ``send_guarded``, for the event loop: async receivers are awaited there,
    sync ones run in a thread (Django's ``asend_robust``).

    On Django 5.2, sent while the task's exception is handled (``task_finished`` of a raised
    attempt), the whole send runs in that thread, where asgiref raises the exception again:
    that ``asend_robust`` hid it from sync receivers, and the backport's receiver logged the
    failure with ``NoneType: None`` for its traceback (docs/observability.md, Signals).
    """
    if not ASEND_SHOWS_EXCEPTION and sys.exception() is not None:
        await sync_to_async(send_guarded)(signal, sender, result)
        return
    if heard(signal, result.status):
        with _failures_logged(signal, result) as responses:
            try:
                responses += await signal.asend_robust(sender, task_result=result)
            except BaseException as failure:  # the event loop must go on
                if isinstance(failure, asyncio.CancelledError) and _handed_back():
                    raise  # the lane hands the task back
                if _an_interrupt(failure):
                    raise
                _log_undelivered(result, failure)


@contextmanager
def _failures_logged(signal: Any, result: TaskResult) -> Iterator[list[tuple[Any, Any]]]:
    """Collect the send's responses in the list given; once the block ends, log each receiver
    that raised. What django.dispatch logs meanwhile (in the threads and asyncio tasks the
    receivers run in too, which carry the context) is held back until then. Logging a
    failure can raise (an exception whose traceback cannot be formatted): that is logged by
    its type alone, as a send that raised is."""
    responses: list[tuple[Any, Any]] = []
    held: list[logging.LogRecord] = []
    reset = _held.set(held)
    try:
        yield responses
    finally:
        _held.reset(reset)
        try:
            _log_failures(signal, responses, result, held)
        except BaseException as failure:  # the sender's thread or loop must go on
            _log_undelivered(result, failure)


def _handed_back() -> bool:
    """Tell whether the lane cancelled the sending task to hand it back, rather than a receiver
    raising ``CancelledError`` of its own, which is a receiver's failure: Django 5.2's
    ``asend_robust`` lets it through (docs/observability.md, Signals)."""
    current = asyncio.current_task()
    return current is None or current.cancelling() > 0


def _log_undelivered(result: TaskResult, failure: BaseException) -> None:
    logger.error(
        "Signal not delivered to every receiver task_id=%s: sending it raised %s",
        result.id,
        type(failure).__name__,
    )


def _log_failures(
    signal: Any,
    responses: Iterable[tuple[Any, Any]],
    result: TaskResult,
    held: list[logging.LogRecord],
) -> None:
    """Log each receiver that raised, once, naming it and the task; let through what else
    django.dispatch logged during the send (a receiver's own ``send_robust`` of another
    signal)."""
    failures = [(r, response) for r, response in responses if isinstance(response, BaseException)]
    for receiver, failure in failures:
        logger.error(
            "Signal receiver failed receiver=%s signal=%s task_id=%s",
            _name_of(receiver),
            _SIGNAL_NAMES.get(signal, signal),
            result.id,
            exc_info=failure,
        )
    _release(held, [failure for _, failure in failures])


def _release(held: list[logging.LogRecord], said: Iterable[BaseException]) -> None:
    """Log the held django.dispatch lines, but those about a failure in ``said``."""
    said_ids = {id(failure) for failure in said}
    for record in held:
        if record.exc_info is None or id(record.exc_info[1]) not in said_ids:
            _dispatch_logger.handle(record)


def _name_of(receiver: Any) -> str:
    """Name a receiver by where the code it runs is defined, as an import path reads: a
    ``functools.partial`` by its function, a callable object by its class. A repr's address
    finds nothing in the code, and its spaces break the key=value line."""
    while isinstance(receiver, partial):
        receiver = receiver.func
    named = receiver if hasattr(receiver, "__qualname__") else type(receiver)
    return f"{getattr(named, '__module__', None) or '?'}.{named.__qualname__}"


def heard(signal: Any, status: TaskResultStatus) -> bool:
    """Tell whether sending ``signal`` about a task in ``status`` can have an effect.

    Django's receivers log a failure at ERROR and anything else at INFO or below (enqueue at
    DEBUG: a logger that prints INFO is sent to, which is the safe side). Every entry of
    ``Signal.receivers`` starts with its lookup key, whose first item is the receiver's id;
    a list of another shape is sent to, to be safe.
    """
    level = logging.ERROR if status == TaskResultStatus.FAILED else logging.INFO
    if _tasks_logger.isEnabledFor(level):
        return True
    try:
        return any(entry[0][0] not in _LOG_RECEIVER_IDS for entry in signal.receivers)
    except (TypeError, IndexError, KeyError):
        return True
