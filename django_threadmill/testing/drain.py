"""Run a backend's queued tasks in the calling thread until its queues are empty: ``drain``.

The worker's own parts without its threads. The broker's acquire reserves tasks, so priorities,
delayed tasks and retries that are due, unique tasks and queue limits behave as in a worker; the
worker's ``Executor`` runs each, a sync task in the calling thread and ``async def`` ones on an
event loop the drain runs (their thread-sensitive calls, Django's async ORM among them, come
back to the calling thread); every start and outcome is written through the broker's fenced
start and finish before the next task, as with ``--sync-ack``, workflows advance from their
steps' outcomes at once (and, once nothing is left to run, from every entry of their queues'
outboxes under every shard count, as a worker's look does), and the metrics are sent at the
end. A task's last progress report is written with its outcome. Running in the caller's thread,
tasks see what a test set up there: its database transaction, its mocks, its log capture.
"""

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from datetime import timedelta
from functools import cached_property, partial

from asgiref.sync import AsyncSingleThreadContext, async_to_sync
from django.db import connections

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker import Finish, Rejected, Reservation, Start
from ..codec.ids import make_worker_id
from ..codec.payloads import forget_rebuilt_tasks
from ..codec.times import now_ms
from ..compat import TaskResult
from ..conf.durations import seconds_of, whole_ms
from ..enqueue.on_commit import commit_hooks
from ..exceptions import BrokerUnavailable, DrainDidNotEmpty
from ..observability.signals import interrupts_raised
from ..wording import a_type, shown
from ..worker.cancelled_steps import CancelledSteps
from ..worker.db_connections import connections_kept
from ..worker.executor import Executor
from ..worker.lanes import is_async
from ..worker.leases import HeldLeases, LeaseKeeper
from ..worker.not_recorded import log_not_recorded
from ..worker.options import served_queues
from ..workflows.advance import drain as drain_outbox
from ..workflows.advance import drain_queues
from ..workflows.failed_entries import FailedEntries
from .not_run import (
    say_left_for_later,
    say_paused,
    say_slots_held,
    say_waiting_for_commit,
    tasks_stored,
)
from .other_aliases import say_other_aliases
from .savepoints import rolled_back_if_broken

logger = logging.getLogger(__name__)

BATCH = 16  # tasks reserved per queue per round, like a small prefetch
DEFAULT_WAIT_FOR_DELAYED_S = 5.0  # delayed tasks and retries due this soon are waited for
DEFAULT_MAX_TASKS = 1000  # attempts one drain runs before it calls its queues endless
# The drain running in this thread, seen by its tasks (sync ones, async ones on its loop, and
# their sync_to_async calls back here) through copies of this context: they may not drain.
_running: ContextVar["_Drain | None"] = ContextVar("threadmill_drain_running", default=None)


def drain(
    backend: str = "default",
    queues: Iterable[str] | None = None,
    *,
    wait_for_delayed: float | timedelta = DEFAULT_WAIT_FOR_DELAYED_S,
    max_tasks: int = DEFAULT_MAX_TASKS,
) -> int:
    """Run the tasks of ``queues`` (default: the backend's QUEUES) in this thread until the
    queues are empty; return how many attempts ran (a task retried twice counts three).

    Empty means no task is ready, and none delayed, retried or held back by a rate limit is due
    within ``wait_for_delayed`` seconds (5 by default; 0: only what is due now). Those due
    sooner are waited for and run; later ones stay queued, READY, as they would in Redis, and a
    warning says how many and when the next is due (as it does for enqueues still waiting for
    a commit the test never makes: docs/testing.md, What a drain leaves).
    Tasks enqueued by the tasks run too. A task's exception is its outcome, as in a worker:
    look at its result.

    Raise ``DrainDidNotEmpty`` rather than run more than ``max_tasks`` attempts (1000 by
    default): a task that enqueues itself would otherwise keep the drain running for good.
    A task the drain runs may not drain: it returns, and this drain runs what it enqueued.
    """
    _refuse_inside_a_drain()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "drain() runs tasks in the calling thread, and this thread is running an event "
            "loop (an async test?). From async code, run it in the sync thread as Django's "
            "async ORM does: await sync_to_async(drain)() (from asgiref.sync import "
            "sync_to_async), or call it from a sync test."
        )
    _check_max_tasks(max_tasks)
    found = threadmill_backend(backend)
    forget_rebuilt_tasks()  # a task patched since the last drain, or no more, runs as found now
    return _Drain(
        found, served_queues(found, queues), _horizon_ms(wait_for_delayed), max_tasks
    ).run()


def _refuse_inside_a_drain() -> None:
    """Raise if a task the drain running here runs (or code it calls) asks for a drain: one
    inside it would run outside its ``max_tasks``, and a task that enqueues itself and drains
    again would recurse until Python's recursion limit broke it at whatever step it was on."""
    outer = _running.get()
    if outer is None:
        return
    raise RuntimeError(
        f"drain() was called inside the drain() running in this thread, from {_caller(outer)}. "
        "The running drain runs what a task enqueues once the task returns: return from it "
        "instead of draining. A drain inside a drain would run outside max_tasks, and a task "
        "that enqueues itself and drains again would recurse without end."
    )


def _caller(outer: "_Drain") -> str:
    """Name the tasks ``outer`` runs now: one of them (or code it calls) asked for a drain."""
    paths = list(dict.fromkeys(outer.running))  # an async batch's, each once
    named = ", ".join(repr(path) for path in paths)
    if len(paths) == 1:
        return f"the task {named} it runs, or code that task calls"
    return f"one of the tasks {named} it runs, or code they call" if paths else "code it runs"


def _horizon_ms(wait_for_delayed: float | timedelta) -> int:
    """Return ``wait_for_delayed`` in whole ms; raise TypeError for what is no number of
    seconds nor timedelta (None or "5" raised ValueError, where a wrong ``max_tasks`` raised
    TypeError), ValueError for a wait below 0 or past every float."""
    if isinstance(wait_for_delayed, bool) or not isinstance(
        wait_for_delayed, int | float | timedelta
    ):
        raise TypeError(
            f"wait_for_delayed={shown(wait_for_delayed)} is {a_type(wait_for_delayed)}, not a "
            "wait. Pass an int or a float of seconds, 0 or more, or a timedelta."
        )
    seconds = seconds_of(wait_for_delayed)
    if seconds is None or seconds < 0:
        raise ValueError(
            f"wait_for_delayed={shown(wait_for_delayed)} is not a wait. Pass 0 or more seconds, "
            "or a timedelta."
        )
    return whole_ms(seconds)


def _check_max_tasks(max_tasks: int) -> None:
    if not isinstance(max_tasks, int) or isinstance(max_tasks, bool):
        raise TypeError(
            f"max_tasks={shown(max_tasks)} is {a_type(max_tasks)}, not a number of tasks. Pass "
            "an int, 1 or more."
        )
    if max_tasks < 1:
        raise ValueError(
            f"max_tasks={shown(max_tasks)} is not a number of tasks to run. Pass 1 or more."
        )


class _Drain:
    """One drain: reserve a batch from every queue, run it, write it, until nothing is due."""

    def __init__(
        self,
        backend: ThreadmillTaskBackend,
        queues: tuple[str, ...],
        horizon_ms: int,
        max_tasks: int,
    ) -> None:
        self.backend = backend
        self.broker = backend.broker
        self.queues = queues
        self.horizon_ms = horizon_ms
        self.max_tasks = max_tasks
        self.runs_of: Counter[str] = Counter()  # attempts begun, by task path
        self.retries_of: Counter[str] = Counter()  # of those, the attempts after a failed one
        self.over_max_tasks = False  # a task was due past max_tasks: it was handed back
        self.enqueued: list[TaskResult] = []  # every enqueue while it runs, any backend's
        self.worker_id = make_worker_id()
        self.cancelled_steps = CancelledSteps(self.broker)
        self.executor = Executor(
            self.worker_id,
            backend.alias,
            type(backend),
            max_result_bytes=backend.settings.max_result_bytes,
            interruptible=True,
            commits=_as_their_own_commit,
            retry_checked=self.cancelled_steps.retry_checked,
        )
        self.held = HeldLeases()
        # Outbox entries whose advance raised: tried again a minute later, not in each look.
        self.failed_entries = FailedEntries()
        # Never started: its renew() is called between tasks, once lease_ttl / 3 has passed.
        self.keeper = LeaseKeeper(
            self.broker,
            self.worker_id,
            queues,
            self.held,
            backend.settings.renewal_s,
            on_crash=lambda: None,
        )
        self.renew_at = 0.0
        self.ran = 0
        self.running: list[str] = []  # the paths of the tasks running now, for a refusal
        self.next_due_ms: int | None = None  # at the end: ms until a task left for later is due
        self.paused: list[str] = []  # at the end: the queues whose last answer was "paused"
        # At the end: the queues whose concurrency limit others held full in the last answer.
        self.slots_held: list[str] = []
        # The drain's event loop and the batch of async tasks running on it.
        self._gathering: tuple[asyncio.AbstractEventLoop, asyncio.Future[list[Finish]]] | None = (
            None
        )

    def run(self) -> int:
        say_waiting_for_commit()
        running = _running.set(self)
        try:
            # One thread for every event loop of this drain, joined when it ends; the enqueues
            # made meanwhile noted, for the error of a drain that does not empty its queues.
            with (
                connections_kept(),
                AsyncSingleThreadContext(),
                interrupts_raised(),
                tasks_stored() as self.enqueued,
            ):
                while self._round():
                    pass
        finally:
            _running.reset(running)
        self.broker.send_metrics()
        if self.next_due_ms is not None:
            said_apart = {*self.paused, *self.slots_held}
            served = [queue for queue in self.queues if queue not in said_apart]
            say_left_for_later(self.broker, served, self.next_due_ms, self.horizon_ms, self.ran)
        if self.paused:  # a paused queue answers as an empty one: only then is it looked at
            say_paused(self.broker, self.paused, self.ran)
        if self.slots_held:
            say_slots_held(self.broker, self.slots_held, self.ran)
        if not self.ran:
            say_other_aliases(self.backend.alias)
        return self.ran

    def _round(self) -> bool:
        """Reserve and run one batch, or wait for the next due task; False once none is due
        within the horizon."""
        acquired = self.broker.acquire_from(dict.fromkeys(self.queues, BATCH))
        batch = [reservation for each in acquired for reservation in each.reservations]
        if batch:
            self.held.add([reservation.lease for reservation in batch])
            self.renew_at = time.monotonic() + self.keeper.interval_s
            self._run(batch)
        if failed := next((each.failed for each in acquired if each.failed is not None), None):
            raise failed  # a queue's call failed: the test sees it, once the others' batch ran
        if self.over_max_tasks:
            raise self._did_not_empty()
        if batch:
            return True
        # Entries no finish of this drain noted (a step cancelled meanwhile, one of a worker of
        # another shard count), as a worker's look at every outbox finds them: advancing may
        # enqueue more steps.
        if drain_queues(self.backend, list(self.queues), self.failed_entries, self.other_parts):
            return True
        due_ms = min(
            (each.next_due_ms for each in acquired if each.next_due_ms is not None), default=None
        )
        if due_ms is None or due_ms > self.horizon_ms:
            self.next_due_ms = due_ms
            answers = list(zip(self.queues, acquired, strict=True))
            self.paused = [queue for queue, each in answers if each.paused]
            # The drain holds no lease between rounds: a full limit is held by others.
            self.slots_held = [q for q, each in answers if each.held_back and not each.by_rate]
            return False
        time.sleep(due_ms / 1000)  # until the next delayed task, retry or rate token is due
        return True

    @cached_property
    def other_parts(self) -> list[str]:
        """The parts of every other shard count the queues kept keys under, read once: their
        outboxes are looked at too (docs/scaling.md, Changing the shard count)."""
        other = self.broker.other_parts(self.queues)
        return [part for queue in self.queues for part in other[queue]]

    def _run(self, batch: list[Reservation]) -> None:
        """Run the sync tasks of ``batch`` one by one, then its async ones together."""
        try:
            for reservation in batch:
                if not is_async(reservation) and self._to_run(reservation):
                    self._run_sync(reservation)
            on_loop = [r for r in batch if is_async(r) and self._to_run(r)]
            if on_loop:
                self._run_async(on_loop)
        finally:
            self._hand_back()

    def _to_run(self, reservation: Reservation) -> bool:
        """Tell whether ``reservation`` runs now: still ours, not a step its workflow stopped
        (that is recorded as cancelled instead, as a worker does), within ``max_tasks`` (past
        it, it stays held, to be handed back), and given its queue's start turn."""
        if not self._still_held(reservation):
            return False
        cancelled = self.cancelled_steps.cancellation(reservation)
        if cancelled is not None:
            self._record([cancelled])
            return False
        if self.runs_of.total() >= self.max_tasks:
            self.over_max_tasks = True
            return False
        if not self._turn_taken(reservation):
            return False
        self.runs_of[reservation.lease.task_path] += 1
        if reservation.errors:
            self.retries_of[reservation.lease.task_path] += 1
        return True

    def _turn_taken(self, reservation: Reservation) -> bool:
        """Wait for the start turn of a task of a queue with a ``rate`` (pace.lua), as a
        worker's runner does (worker/pacing.py; a queue without one has it at once, no call);
        False when its queue was paused since (left held, the batch's end hands it back) or its
        lease was lost meanwhile. Acquire spaces reservations, not starts: a task of another
        queue run first held this one's start back, and the queue's next task, reserved an
        interval later, started right behind it. Here, unlike a worker, the drain's one thread
        waits for any turn, and a Redis error reaches the test."""
        while (wait_ms := self.broker.start_turn(reservation.lease.queue)) != 0:
            if wait_ms is None:
                return False
            # Asked again at least once a renewal interval: the batch's leases are renewed.
            time.sleep(min(wait_ms / 1000, self.keeper.interval_s))
            if not self._still_held(reservation):
                return False
        return True

    def _did_not_empty(self) -> DrainDidNotEmpty:
        """The error of a drain that ran ``max_tasks`` and still found tasks to run."""
        most_run = ", ".join(
            f"{path!r} ran {count} times{self._of_them_retries(path)}"
            for path, count in self.runs_of.most_common(3)
        )
        return DrainDidNotEmpty(
            f"drain() ran max_tasks={self.max_tasks} tasks and the queues {list(self.queues)} "
            f"are still not empty: {most_run}. {self._why_not_empty()}",
            ran=self.ran,
        )

    def _why_not_empty(self) -> str:
        """Say whether tasks enqueued while the drain ran kept its queues full (a loop to
        break), or none was (the queues held more than ``max_tasks`` before it began): the
        error blamed a loop of enqueues where a test had enqueued 1,001 tasks itself."""
        ours = sum(1 for result in self.enqueued if result.backend == self.backend.alias)
        if not ours:
            return (
                "No task was enqueued while it ran, so none enqueues itself: the tasks queued "
                "before it began, with their retries, were more than that. Pass "
                "drain(max_tasks=...) a higher bound if the test means to run that many."
            )
        return (
            f"{ours} task{' was' if ours == 1 else 's were'} enqueued while it ran: a task that "
            "enqueues itself, or tasks that enqueue each other, never empty their queues. "
            "Break the loop in the test (mock the enqueue, or give the task a condition to "
            "stop on), or pass drain(max_tasks=...) a higher bound if the test means to run "
            "that many."
        )

    def _of_them_retries(self, path: str) -> str:
        """Say how many of ``path``'s attempts were retries: its retry policy, not an enqueue,
        ran it again, and the advice about enqueues would point nowhere."""
        retries = self.retries_of[path]
        if not retries:
            return ""
        return (
            f" ({retries} of them retries under its retry policy: its result's errors say "
            "why each attempt failed)"
        )

    def _still_held(self, reservation: Reservation) -> bool:
        """Renew the leases when due; tell whether ``reservation`` is still ours to run."""
        if time.monotonic() >= self.renew_at:
            self.keeper.renew()
            self.renew_at = time.monotonic() + self.keeper.interval_s
        if self.held.holds(reservation.lease):
            return True
        logger.warning(
            "Skipped task whose reservation was lost task_id=%s", reservation.lease.task_id
        )
        return False

    def _run_sync(self, reservation: Reservation) -> None:
        self.running = [reservation.lease.task_path]
        started_ms = now_ms()
        self._write(
            "start", self.broker.start, [Start(lease=reservation.lease, started_ms=started_ms)]
        )
        finish = self.executor.run(reservation, started_ms)  # its commits run in its attempt
        if finish is not None:  # None only when a watchdog ended the attempt: drain has none
            self._finish([finish])

    def _run_async(self, reservations: list[Reservation]) -> None:
        self.running = [r.lease.task_path for r in reservations]
        starts = [Start(lease=r.lease, started_ms=now_ms()) for r in reservations]
        self._write("start", self.broker.start, starts)
        waiting = _waiting_callbacks()
        try:
            with rolled_back_if_broken():  # their calls interleave: one savepoint for all
                finishes = async_to_sync(self._gather)(reservations, starts)
        except BaseException:
            self._stop_gathering()
            raise
        self._finish(finishes)
        # Their thread-sensitive calls left these on this thread's transaction, interleaved, so
        # which task left which is not known: they run once every outcome is written, and one
        # that raises reaches the caller, as captureOnCommitCallbacks(execute=True) does.
        _run_callbacks_added(waiting)

    async def _gather(self, reservations: list[Reservation], starts: list[Start]) -> list[Finish]:
        gathering = asyncio.gather(
            *(
                self.executor.arun(reservation, start.started_ms)
                for reservation, start in zip(reservations, starts, strict=True)
            )
        )
        self._gathering = asyncio.get_running_loop(), gathering
        return list(await gathering)

    def _stop_gathering(self) -> None:
        """An interrupt (Ctrl-C, a test's timeout) reached this thread while the tasks ran on
        the loop: cancel them, handed back unrecorded, so the loop ends. Left running, they would
        wait for this thread to serve their thread-sensitive calls, and the drain would hang."""
        if self._gathering is None:
            return
        loop, gathering = self._gathering
        if not gathering.done():
            self.executor.handing_back.set()
            loop.call_soon_threadsafe(gathering.cancel)

    def _finish(self, finishes: list[Finish]) -> None:
        """Record the outcomes of tasks that ran."""
        self._record(finishes)
        self.ran += len(finishes)

    def _record(self, finishes: list[Finish]) -> None:
        # The tasks' last progress reports go with their outcomes, written first.
        progress = self.executor.progress.take(flush=True)
        self._write("finish", partial(self.broker.finish, progress=progress), finishes)
        self.held.discard([finish.lease for finish in finishes])
        for part in self.broker.outbox_signal.take():  # workflow steps ended: advance them
            drain_outbox(self.backend, part, self.failed_entries)

    def _write[T: (Start, Finish)](
        self, kind: str, call: Callable[[str, Sequence[T]], list[Rejected[T]]], items: list[T]
    ) -> None:
        """Write ``items`` now; say which were not recorded and why, as the ack writer does."""
        log_not_recorded(logger, kind, call(self.worker_id, items))

    def _hand_back(self) -> None:
        """Release what a batch cut short left reserved (a Redis error, an interrupt)."""
        unstarted = self.held.snapshot()
        if not unstarted:
            return
        self.held.discard(unstarted)
        with suppress(BrokerUnavailable):  # else their leases lapse and the reaper settles them
            self.broker.release(unstarted)


@contextmanager
def _as_their_own_commit() -> Iterator[None]:
    """Run the ``on_commit`` callbacks a sync task leaves waiting on the test's transaction as
    it ends, inside its attempt, as a worker's commit would (a ``TestCase`` wraps each test in
    one that never commits): an ``enqueue_on_commit`` from a task would otherwise never be
    stored, and a callback that raises fails the task. Those of a task that raised run too:
    its blocks that completed had committed before it raised. Callbacks of an ``atomic()`` a
    task rolled back are gone already, as in a worker. An interrupt leaves them waiting. A
    task whose database error left the test's transaction unusable is rolled back first
    (testing/savepoints.py), so the callbacks, the tasks after it and the test can query."""
    waiting = _waiting_callbacks()
    try:
        with rolled_back_if_broken():
            yield
    except Exception:
        _run_callbacks_added(waiting)
        raise
    _run_callbacks_added(waiting)


def _waiting_callbacks() -> dict[str, int]:
    """How many ``on_commit`` callbacks wait on each database's transaction now."""
    return {alias: len(connections[alias].run_on_commit) for alias in connections}


def _run_callbacks_added(waiting: dict[str, int]) -> None:
    """Run, and take off the transaction, the callbacks added since ``waiting`` was counted."""
    for alias, before in waiting.items():
        connection = connections[alias]
        # Read afresh each time: a callback may register more, and a rollback in one replaces
        # the list.
        while len(connection.run_on_commit) > before:
            hooks = commit_hooks(connection)
            added = hooks[before:]
            del hooks[before:]
            for _savepoints, callback, robust in added:
                if not robust:
                    callback()
                    continue
                try:
                    callback()
                except Exception:
                    logger.exception("Error calling %r in on_commit()", callback)
