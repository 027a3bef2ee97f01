"""Run one reserved task the way Django's ImmediateBackend would, and say how it ended.

``run`` runs a sync task in the calling worker thread; ``arun`` awaits an ``async def`` task on
the process's event loop (worker/event_loop.py). Both end the attempt through
worker/outcome.py, so signals, retries and metrics are the same in either lane.

The attempt's ``TaskResult`` is built only when something reads it: a task that takes the
context, a signal receiver, or the retry policy of a failed attempt. A plain task whose
signals nobody hears never needs one: building it was a fifth of the event loop's time per
async task (docs/design.md, Worker).
"""

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from asgiref.sync import sync_to_async

from ..broker import Finish, Outcome, Reservation
from ..broker.raw_replies import controls_escaped
from ..codec.payloads import decode_payload, load_task
from ..codec.results import encode_result, error_text
from ..codec.times import now_ms
from ..compat import TaskResultStatus, task_started
from ..conf.settings import DEFAULT_MAX_RESULT_BYTES
from ..exceptions import PayloadError, TaskTimeout, TransactionLeftOpen
from ..observability.signals import asend_guarded, heard, send_guarded
from ..observability.tracing import traced_aexecution, traced_execution, traced_timeout
from ..progress.channels import close_channel, open_channel
from . import outcome
from .attempt import Attempt
from .db_connections import (
    OrmThreadCloser,
    close_stale_connections,
    roll_back_open_transactions,
)
from .progress import PendingProgress
from .receivers_thread import receivers_thread

logger = logging.getLogger(__name__)
# What a task's call runs in where nothing need wrap it: one shared nullcontext (it holds no
# state), so the task pays a with-block (about 0.25 µs), not a new object. A task that does
# not take the context reports no progress; a worker's task commits its own transactions.
NOTHING_AROUND = nullcontext()


def _committed_by_themselves() -> AbstractContextManager[object]:
    """A worker's tasks commit their own transactions: nothing to add around their call."""
    return NOTHING_AROUND


# How many forks made this process, counted in each child: an executor made before a fork is
# a task's child after it. A global read, not a getpid() system call per task.
_forks_seen = 0


def _count_fork() -> None:
    global _forks_seen
    _forks_seen += 1


os.register_at_fork(after_in_child=_count_fork)


def _own() -> bool:
    """The claim of an attempt nothing else can end (drain(), a thread with no watchdog)."""
    return True


def _kept() -> bool:
    """Tell that nothing gave up on the attempt: nothing else can end it."""
    return False


def _kept_by_caller(finish: Finish) -> None:
    """Leave a decided outcome to the caller, which records what ``run`` returns (drain())."""


def _as_decided(finish: Finish, reservation: Reservation) -> Finish:
    """Return ``finish`` as the retry policy decided it (an executor told of no workflows)."""
    return finish


def _interrupts_caller(exc: BaseException) -> bool:
    """Tell whether ``exc`` stops whoever runs the task rather than the task alone: what is no
    ``Exception`` (Ctrl-C, ``SystemExit``, a test framework's outcome), except the task's own
    ``CancelledError``."""
    return not isinstance(exc, Exception | asyncio.CancelledError)


class Executor:
    """Executes tasks for one worker process's threads, and for its event loop."""

    def __init__(
        self,
        worker_id: str,
        backend_alias: str,
        backend_class: type,
        task_timeout_s: float | None = None,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        *,
        interruptible: bool = False,
        commits: Callable[[], AbstractContextManager[object]] = _committed_by_themselves,
        retry_checked: Callable[[Finish, Reservation], Finish] = _as_decided,
    ) -> None:
        self.worker_id = worker_id
        # A failed step its workflow stopped gets no retry (worker/cancelled_steps.py).
        self.retry_checked = retry_checked
        # drain(): Ctrl-C and a test framework's outcome (pytest-timeout's failure) raised while
        # a task runs reach the caller, unrecorded; a worker records every task's exception.
        self.interruptible = interruptible
        # drain(): what a sync task's call runs in to have its on_commit callbacks run as it
        # ends, inside the attempt, so one that raises fails it as its commit would in a worker.
        self.commits = commits
        self.max_result_bytes = max_result_bytes
        self.backend_alias = backend_alias
        self.backend_class = backend_class
        self.task_timeout_s = task_timeout_s  # enforced here for async tasks only (cancel)
        # What its tasks report, until the ack writer (or drain) takes it.
        self.progress = PendingProgress()
        self.orm_thread = OrmThreadCloser()  # its stale connections, closed after async tasks
        # Set by the event loop lane at the end of the grace period (drain(): by an interrupt):
        # an async task cancelled from then on is handed back unrecorded; any other
        # CancelledError is the task's own.
        self.handing_back = threading.Event()
        self._forks = _forks_seen  # a task that forks: its child must not go on as a worker

    def _attempt(self, reservation: Reservation, started_ms: int) -> Attempt | Finish:
        """Load the attempt, or return the FAILED outcome of a task that cannot be loaded (a
        corrupt payload, a path that no longer imports)."""
        try:
            payload = decode_payload(reservation.payload)
            task = load_task(
                payload["path"],
                backend=self.backend_alias,
                queue=reservation.lease.queue,
                payload=payload,
            )
        except PayloadError as exc:
            # The message may quote the task module's own error: a line break would forge a line.
            logger.error(
                "Task failed task_id=%s error=%s",
                reservation.lease.task_id,
                controls_escaped(str(exc)),
            )
            return outcome.failed(reservation.lease, exc, started_ms, None)
        return Attempt(reservation, payload, task, started_ms, self.worker_id)

    @traced_execution
    def run(
        self,
        reservation: Reservation,
        started_ms: int,
        claim: Callable[[], bool] = _own,
        given_up: Callable[[], bool] = _kept,
        decided: Callable[[Finish], None] = _kept_by_caller,
    ) -> Finish | None:
        """Run a sync task; any exception, SystemExit and KeyboardInterrupt included, is
        recorded.

        ``claim`` is asked once the task returned or raised, before its outcome is logged,
        signalled or returned: False (the watchdog timed the attempt out meanwhile and
        recorded it) returns None, and nothing more is said of the attempt. ``given_up`` is
        asked once before the task is called, claiming nothing: True (the watchdog timed the
        attempt out already, in its ``task_started`` receivers) returns None, the task unrun.
        ``decided`` is given the outcome before its ``task_finished`` receivers run, so that a
        stop can record it while a slow receiver still holds the thread.
        """
        # Before and after each task, as Django does around each request: CONN_MAX_AGE holds,
        # and a thread waiting for its next task holds no connection (docs/worker.md, Sizing).
        close_stale_connections()
        try:
            return self._run(reservation, started_ms, claim, given_up, decided)
        finally:
            close_stale_connections()

    def _run(
        self,
        reservation: Reservation,
        started_ms: int,
        claim: Callable[[], bool],
        given_up: Callable[[], bool],
        decided: Callable[[Finish], None],
    ) -> Finish | None:
        """Load the attempt, run it and return its outcome, as ``run`` describes."""
        attempt = self._attempt(reservation, started_ms)
        if isinstance(attempt, Finish):
            return attempt if claim() else None
        if heard(task_started, TaskResultStatus.RUNNING):
            send_guarded(task_started, self.backend_class, attempt.result)
        if given_up():
            self._log_not_run(attempt)
            return None
        # Set once the task returned: an error after it is its value's, which no retry changes.
        returned_in_full = False
        try:
            # Its commits end after its open blocks are rolled back: theirs are dropped first.
            with self._reporting(attempt), self.commits():
                try:
                    called = attempt.call()
                finally:
                    self.end_forked_child()
                    left_open = roll_back_open_transactions()
            if left_open:
                raise TransactionLeftOpen(
                    f"Task {attempt.task.module_path!r} returned inside a transaction.atomic() "
                    f"block it never left (database {', '.join(left_open)}); it was rolled "
                    "back, so its writes are undone. Use atomic() as a with-block or decorator."
                )
            returned_in_full = True
            returned, value = encode_result(called, attempt.task.module_path, self.max_result_bytes)
        except BaseException as exc:
            if self.interruptible and _interrupts_caller(exc):
                raise
            if not claim():
                return None
            # Still inside the except block: task_finished receivers see the exception.
            finish = self._failed(attempt, exc, retry=not returned_in_full)
            decided(finish)
            outcome.announce(self.backend_class, attempt, finish)
            return finish
        if not claim():
            return None
        finish = self._succeeded(attempt, value)
        decided(finish)
        outcome.announce(self.backend_class, attempt, finish, returned)
        return finish

    def _log_not_run(self, attempt: Attempt) -> None:
        """Say why an attempt recorded as timed out before its task was called is not run."""
        logger.warning(
            "Skipped task the watchdog timed out before it began task_id=%s path=%s "
            "timeout_s=%s (its task_started receivers ran past --task-timeout; recorded "
            "FAILED, the task not run)",
            attempt.lease.task_id,
            attempt.task.module_path,
            self.task_timeout_s,
        )

    @traced_aexecution
    async def arun(self, reservation: Reservation, started_ms: int) -> Finish:
        """Await an ``async def`` task on the running event loop, within ``task_timeout_s``
        (the coroutine is cancelled past it: the attempt ends FAILED with ``TaskTimeout``).

        ``CancelledError`` once the lane hands back (the grace period is over) is let through
        while the task's coroutine runs: the attempt is handed back unrecorded
        (worker/event_loop.py). Once the coroutine ended, the attempt is recorded: a cancel
        then only cuts its ``task_finished`` receivers short. Before the hand-back, a
        ``CancelledError`` is the task's own (it raised it, or awaited something cancelled)
        and ends the attempt.
        """
        attempt = self._attempt(reservation, started_ms)
        if isinstance(attempt, Finish):
            return attempt
        deadline = self._deadline()  # before task_started, as the watchdog's clock for a thread
        if heard(task_started, TaskResultStatus.RUNNING):
            with receivers_thread():  # not behind the tasks' ORM calls
                await asend_guarded(task_started, self.backend_class, attempt.result)
        if deadline is not None and asyncio.get_running_loop().time() > deadline:
            return await self._timed_out_unrun(attempt)
        self.orm_thread.task_began()  # counted out by after_task, below
        returned_in_full = False  # as in run
        try:
            with self._reporting(attempt):
                try:
                    awaited = await self._awaited(attempt, deadline)
                finally:
                    self.end_forked_child()
            returned_in_full = True
            returned, value = encode_result(
                awaited, attempt.task.module_path, self.max_result_bytes
            )
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and self.handing_back.is_set():
                raise
            if self.interruptible and _interrupts_caller(exc):
                # It ends the drain's loop, which cancels the batch's other coroutines: they go
                # back unrecorded with it, as a worker hands back those it cancels at a stop.
                self.handing_back.set()
                raise
            # The retry policy is sync code, asked off the loop as a sync task's is in its
            # thread: on the loop, one that read the database raised SynchronousOnlyOperation,
            # and the task ended FAILED. The receivers' thread closes what it opens.
            with receivers_thread():
                finish = await await_to_its_end(
                    sync_to_async(self._decided)(attempt, exc, retry=not returned_in_full)
                )
            # Off the loop, as a step's look before it starts: a round trip, or a Redis away.
            if finish.outcome is Outcome.RETRY:
                finish = await await_to_its_end(
                    asyncio.to_thread(self.retry_checked, finish, attempt.reservation)
                )
            _log_failed(attempt, finish, exc)
            with receivers_thread():  # a timed-out query holds the ORM's thread
                await await_cut_short(outcome.aannounce(self.backend_class, attempt, finish))
            return finish
        finally:
            self.orm_thread.after_task()  # the ORM's thread, as a request would
        finish = self._succeeded(attempt, value)
        with receivers_thread():
            await await_cut_short(outcome.aannounce(self.backend_class, attempt, finish, returned))
        return finish

    @traced_timeout
    def timed_out(self, reservation: Reservation, started_ms: int, error: TaskTimeout) -> Finish:
        """Return the FAILED outcome of a sync attempt the watchdog ended, and send
        ``task_finished`` for it as the thread would have (the thread, abandoned, says nothing
        more). The attempt is loaded again: the thread's own is in use there. Its channel is
        closed first: the thread may run on, and what it reports from now on is dropped."""
        close_channel(reservation.lease)
        attempt = self._attempt(reservation, started_ms)
        if isinstance(attempt, Finish):  # it loaded for its thread; cannot load now
            return outcome.failed(reservation.lease, error, started_ms, None)
        finish = outcome.failed(attempt.lease, error, started_ms, attempt.result, retry=False)
        outcome.announce(self.backend_class, attempt, finish)
        return finish

    def _deadline(self) -> float | None:
        """Return when an async attempt starting now times out, on the loop's clock."""
        if self.task_timeout_s is None:
            return None
        return asyncio.get_running_loop().time() + self.task_timeout_s

    async def _timed_out_unrun(self, attempt: Attempt) -> Finish:
        """Record FAILED with ``TaskTimeout``, its task not run, an async attempt whose
        ``task_started`` receivers ran past --task-timeout, as the watchdog records a thread's."""
        self._log_not_run(attempt)
        error = TaskTimeout(
            f"Task {attempt.lease.task_id} ran longer than --task-timeout={self.task_timeout_s}s "
            "in its task_started receivers; the worker did not run it. Make them faster or "
            "raise the timeout."
        )
        finish = self._decided(attempt, error, retry=False)
        with receivers_thread():
            await await_cut_short(outcome.aannounce(self.backend_class, attempt, finish))
        return finish

    async def _awaited(self, attempt: Attempt, deadline: float | None) -> Any:
        """Await the task's coroutine; past ``deadline`` (the loop's clock) it is cancelled
        and TaskTimeout raised.

        With a timeout the coroutine runs as a task of its own, so the attempt ends at the
        deadline even if the coroutine ignores the cancel (it is left to end on its own, as
        the watchdog leaves a thread), and a ``TimeoutError`` the task raises itself (an
        ``asyncio.wait_for``, a client's timeout) stays its own error, retried by its policy.
        A coroutine is judged by when it ended, not by when this wait woke: another task's
        blocking call in between had one that returned in time recorded as a ``TaskTimeout``.
        """
        call = attempt.acall()
        if deadline is None:
            return await call
        event_loop = asyncio.get_running_loop()
        timed = _Timed()
        running = event_loop.create_task(timed.run(call))
        try:
            await asyncio.wait((running,), timeout=max(0.0, deadline - event_loop.time()))
        except asyncio.CancelledError:
            if await _let_the_cancel_through(running, deadline):
                raise  # handed back: the coroutine stopped with its attempt
            # It ended before the cancel reached this wait (one turn of the loop later), or
            # caught the cancel and returned or raised: its attempt is recorded as it ended, as
            # without a timeout, not handed back (docs/worker.md, Two lanes); still running at
            # the deadline, it is timed out below.
            _cancel_let_go()
        # Ended past the deadline (its own blocking call kept this wait from waking): stopped,
        # as a thread past it is.
        if not running.done() or timed.ended_at > deadline:
            running.cancel()
            running.add_done_callback(_drop_outcome)
            raise TaskTimeout(
                f"Task {attempt.lease.task_id} ran longer than "
                f"--task-timeout={self.task_timeout_s}s; the worker cancelled it. Make it faster "
                "or raise the timeout."
            )
        try:
            return running.result()
        except _HeldInterrupt as held:
            raise held.interrupt from None

    def end_forked_child(self) -> None:
        """End the process if this is a child a task forked and left to return here (into
        either lane): it holds a copy of the worker's buffer and leases, and would run those
        tasks again."""
        if _forks_seen != self._forks:
            os._exit(0)

    def _reporting(self, attempt: Attempt) -> AbstractContextManager[object]:
        """Route the attempt's ``report_progress`` calls to ``self.progress`` while it runs.

        Only a task that takes the context can report, so no other task opens a channel.
        """
        if not attempt.task.takes_context:
            return NOTHING_AROUND
        return open_channel(attempt.result, attempt.lease, self.progress)

    @staticmethod
    def _succeeded(attempt: Attempt, value: str) -> Finish:
        run_ms = attempt.run_ms()
        finish = outcome.succeeded(attempt.lease, value, attempt.started_ms, now_ms(), run_ms)
        logger.debug(  # -v 2: one line per task (docs/worker.md, "Verbosity")
            "Task succeeded task_id=%s path=%s duration_ms=%d",
            attempt.lease.task_id,
            attempt.task.module_path,
            run_ms,
        )
        return finish

    def _failed(self, attempt: Attempt, exc: BaseException, *, retry: bool = True) -> Finish:
        """Record a raised attempt: a retry if ``retry``, the task's policy says so and its
        workflow, if it is a step, did not stop it; else FAILED."""
        finish = self.retry_checked(self._decided(attempt, exc, retry=retry), attempt.reservation)
        _log_failed(attempt, finish, exc)
        return finish

    @staticmethod
    def _decided(attempt: Attempt, exc: BaseException, *, retry: bool = True) -> Finish:
        """Return a raised attempt's outcome as the task's retry policy decides it.

        The policy reads the TaskResult, so a failed attempt always builds it. Its worker ids
        are set again from the reservation first: the policy counts attempts by them, and the
        task may have changed its TaskResult. ``retry=False`` (the task returned a value that
        cannot be stored: another run would redo its work to fail the same way) and a
        ``TaskTimeout`` end it FAILED, the policy unasked.
        """
        result = attempt.result
        result.worker_ids[:] = [*attempt.reservation.workers, attempt.worker_id]
        return outcome.failed(
            attempt.lease,
            exc,
            attempt.started_ms,
            result,
            retry=retry and not isinstance(exc, TaskTimeout),
            run_ms=attempt.run_ms(),
        )


def _log_failed(attempt: Attempt, finish: Finish, exc: BaseException) -> None:
    """Log a raised attempt's outcome: a retry scheduled, or FAILED."""
    if finish.outcome is Outcome.RETRY:
        logger.warning(
            "Task retry scheduled task_id=%s path=%s attempt=%d delay_s=%.3f error=%s",
            attempt.lease.task_id,
            attempt.task.module_path,
            len(attempt.result.worker_ids),
            finish.retry_delay_ms / 1000,
            type(exc).__name__,
        )
    else:
        logger.error(
            "Task failed task_id=%s path=%s error=%s: %s",
            attempt.lease.task_id,
            attempt.task.module_path,
            type(exc).__name__,
            # Its own __str__ may raise, inside logging's formatting; a line break in it (the
            # task's input, often) would end the line and forge the next.
            controls_escaped(error_text(exc)),
        )


class _HeldInterrupt(Exception):
    """A ``SystemExit`` or ``KeyboardInterrupt`` a task raised, carried out of the asyncio task
    it ran in under a timeout: asyncio re-raises those into the event loop, which then logged
    them as raised by work some task left running; ``_awaited`` raises it again as the task's
    own."""

    def __init__(self, interrupt: BaseException) -> None:
        super().__init__(repr(interrupt))
        self.interrupt = interrupt


class _Timed:
    """A task's coroutine run under ``--task-timeout``: when it ended, on the loop's clock, and
    a ``SystemExit`` or ``KeyboardInterrupt`` it raised held (``_HeldInterrupt``)."""

    ended_at = 0.0  # never ran (cancelled before it started): not past any deadline

    async def run(self, call: Coroutine[Any, Any, Any]) -> Any:
        try:
            return await call
        except (SystemExit, KeyboardInterrupt) as exc:
            raise _HeldInterrupt(exc) from None
        finally:
            self.ended_at = asyncio.get_running_loop().time()


async def await_cut_short(awaitable: Awaitable[object]) -> None:
    """Await ``awaitable``; a cancel meanwhile cuts it short and is not raised.

    For what an attempt awaits once its task's coroutine ended (its ``task_finished``
    receivers, the --sync-ack wait for its write): the lane's cancel at the grace period's end
    hands back attempts still running, and this one ran to its end, so its outcome is recorded
    (docs/worker.md, Shutdown).
    """
    try:
        await awaitable
    except asyncio.CancelledError:
        _cancel_let_go()


async def await_to_its_end[T](awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end and return what it returns; a cancel meanwhile is taken
    back, not raised.

    For what an attempt needs the answer of once its task's coroutine raised (the check that
    its workflow did not stop a retry): the lane's cancel at the grace period's end hands back
    attempts still running, and this one's coroutine ended, so its outcome is recorded
    (docs/worker.md, Shutdown). A cancel the task left pending on itself is taken back too.
    """
    running = asyncio.ensure_future(awaitable)
    while True:
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            if running.cancelled():
                raise
            _cancel_let_go()


def _cancel_let_go() -> None:
    """Take back the cancel just caught and not raised (``Task.uncancel``), as asyncio asks of
    code that swallows one: an ``asyncio.timeout`` entered later would count it as its own."""
    current = asyncio.current_task()
    if current is not None:
        current.uncancel()


async def _let_the_cancel_through(running: "asyncio.Task[Any]", deadline: float) -> bool:
    """Pass the lane's cancel at the grace period's end on to a task's coroutine run under
    --task-timeout, and wait for it, until ``deadline`` at most; tell whether it ended
    cancelled. The coroutine awaited directly, without a timeout, gets the cancel the same
    way: one that caught it and returned was recorded there, and handed back here, its work
    done and its result dropped, for the reaper to fail or run again."""
    running.cancel()
    await asyncio.wait((running,), timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    return running.cancelled()


def _drop_outcome(abandoned: "asyncio.Task[Any]") -> None:
    """Read what a coroutine left past its timeout ended with, so asyncio does not log it as
    never retrieved: its attempt was recorded as timed out already."""
    if not abandoned.cancelled():
        abandoned.exception()
