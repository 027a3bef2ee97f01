"""The event loop lane: ``async def`` tasks run on one event loop per process, many at once.

A thread would sit idle through every await; the loop runs up to ``--async-concurrency`` tasks
in one thread. The prefetcher fills it from the same acquire as the threads (worker/buffer.py);
leases, start notices, acks, signals, retries and metrics are the worker threads'. A task
that blocks the loop (a sync call inside a coroutine) stops every other one: the monitor
notices and names it (docs/worker.md, What blocks the loop).
"""

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from contextvars import Context, copy_context
from typing import Any

from ..broker import Reservation
from ..forks import renew_after_fork
from ..wording import listed_values
from .buffer import Unsorted, reservation_of
from .db_connections import ConnectionClosingExecutor
from .executor import await_cut_short
from .isolation import keep_loop_caches
from .loop_culprits import attempt_of, raising_attempt, reported_attempt, running_attempt
from .loop_hold import LoopHoldLimit, task_named
from .role import RoleThread
from .runner import RunnerParts, TaskRunner

logger = logging.getLogger(__name__)

BEAT_S = 0.05  # the loop notes the time this often while tasks run
BLOCKED_S = 0.1  # a loop that missed its beat this long is reported as blocked
# Of tasks that held a stalled loop in turn, the longest is named only if it held it this long:
# a task stays current while the loop's thread waits for the GIL (tens of ms at start-up).
SHARED_BLOCK_S = 0.05
# What tasks left running, the async ORM's close and async generators left open each get at
# shutdown.
LEFTOVER_S = 1.0


class EventLoopLane(TaskRunner):
    """Run async tasks on one event loop, up to ``concurrency`` at once."""

    def __init__(self, concurrency: int, parts: RunnerParts, on_crash: Callable[[], None]) -> None:
        super().__init__("threadmill-event-loop", parts, on_crash)
        self.concurrency = concurrency
        self.event_loop: asyncio.AbstractEventLoop | None = None  # made in the lane's thread
        self.running: dict[asyncio.Task[None], Reservation] = {}  # the loop's thread only
        self.idle = threading.Event()  # set while no task runs
        self.idle.set()
        # Set while tasks run or work they left runs, until a beat finds none: the monitor
        # watches then.
        self.busy = threading.Event()
        self.last_beat = time.monotonic()
        # A beat is scheduled: one at a time, or each run from no task to one started another
        # that beat as long as tasks ran (a backlog run one at a time piled up thousands).
        self._beating = False
        # Set at the deadline: cancel, then stop; the executor hands back what is cancelled.
        self._finishing = self.executor.handing_back
        self._stopped = False  # the lane stopped the loop itself (``_stop_loop``)
        # Attempts the cancel at the grace period's end handed back; one whose coroutine had
        # ended by then is recorded instead (docs/worker.md, Shutdown).
        self.handed_back = 0
        self.buffer.on_async_work = self.nudge
        renew_after_fork(self)  # a task that forks: its child must not go on as this lane
        # What each task's context is a copy of: the loop thread's own, made in ``loop``.
        self._tasks_context = Context()
        self._cpu_clock: int | None = None  # the loop thread's CPU clock, set in ``loop``

    def after_fork(self) -> None:
        """In a child a task forked on the loop, stop the loop: a child whose task code
        yields to it (``await asyncio.sleep(0)``) ends at the end of that turn
        (``_run_until_stopped``), instead of running the copies of the other tasks on it and
        living on as an orphan. One whose task returns or raises ends before (``arun``)."""
        if threading.current_thread() is self and self.event_loop is not None:
            self.event_loop.stop()

    def loop(self) -> None:
        with suppress(AttributeError, OSError):  # a system with no CPU clock per thread
            self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        keep_loop_caches()
        self._tasks_context = copy_context()
        event_loop = self.event_loop = asyncio.new_event_loop()
        event_loop.set_exception_handler(_report_loop_error)
        # asyncio's default pool, whose threads close the connections ORM calls open there
        # (docs/worker.md, The ORM from async tasks).
        event_loop.set_default_executor(ConnectionClosingExecutor(thread_name_prefix="asyncio"))
        asyncio.set_event_loop(event_loop)
        try:
            event_loop.call_soon(self._admit)  # what came before the loop did
            if self._finishing.is_set():  # the process stopped before the loop was made
                event_loop.call_soon(self._cancel_and_stop)
            self._run_until_stopped(event_loop)
        finally:
            _end_leftovers(event_loop)
            event_loop.run_until_complete(self.executor.orm_thread.close_all(LEFTOVER_S))
            _close_async_generators(event_loop)
            event_loop.close()

    def _run_until_stopped(self, event_loop: asyncio.AbstractEventLoop) -> None:
        """Run the loop until the lane stops it. A task's code may stop it too (``loop.stop()``)
        or raise ``SystemExit`` from work it left running (asyncio lets both out of
        ``run_forever``): the loop runs on, so the other tasks on it are not lost. In a child a
        task forked (``after_fork`` stopped its loop), the process ends here."""
        while not self._stopped:
            try:
                event_loop.run_forever()
            except (SystemExit, KeyboardInterrupt) as exc:
                task_id, path = task_named(raising_attempt(exc))
                logger.error(
                    "Event loop: work an async task left running raised %s; the loop runs on "
                    "task_id=%s path=%s",
                    type(exc).__name__,
                    task_id,
                    path,
                )
                continue
            finally:
                self.executor.end_forked_child()
            if not self._stopped:
                logger.error("Event loop stopped by an async task (loop.stop()); it runs on")

    def _stop_loop(self) -> None:
        self._stopped = True
        asyncio.get_running_loop().stop()

    def _call_soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the loop, from any thread; nothing if it is not running. It runs
        in a copy of the loop thread's clean context, as do the callbacks it schedules: woken
        by a task's sort in the loop's executor, it ran in that task's, which the monitor
        would blame for a stall in the lane's own work (``blocked_task``)."""
        event_loop = self.event_loop
        if event_loop is not None and not event_loop.is_closed():
            event_loop.call_soon_threadsafe(callback, context=self._tasks_context.copy())

    def nudge(self) -> None:
        """Look for work now (the prefetcher put async tasks in the buffer). Any thread."""
        self._call_soon(self._admit)

    def _admit(self) -> None:
        """Start waiting async tasks while there is room (the loop's thread)."""
        if self.stopping.is_set():
            return
        event_loop = asyncio.get_running_loop()
        free = self.concurrency - len(self.running)
        for item in self.buffer.take_async(free) if free > 0 else []:
            # From a copy of the loop thread's clean context, not of whatever context woke
            # the loop (``nudge`` from the prefetcher's): the caches kept there are found.
            task = event_loop.create_task(self._run_one(item), context=self._tasks_context.copy())
            self.running[task] = reservation_of(item)
            task.add_done_callback(self._ended)
        if self.running and self.idle.is_set():
            self.idle.clear()
            if not self._beating:
                self._beating = True
                self.last_beat = time.monotonic()
                self.busy.set()
                event_loop.call_later(BEAT_S, self._beat)

    def _beat(self) -> None:
        """Note the time, and again in ``BEAT_S`` while tasks run or work they left runs: a
        blocking call in work a task started and left running (``create_task``, a
        fire-and-forget notice) holds the loop as the task's own would, after it returned too,
        and went unnamed once no task ran (docs/worker.md, What blocks the loop)."""
        event_loop = asyncio.get_running_loop()
        self.last_beat = time.monotonic()
        self._beating = bool(self.running) or bool(asyncio.all_tasks(event_loop))
        if self._beating:
            event_loop.call_later(BEAT_S, self._beat)
        else:
            self.busy.clear()

    def _ended(self, task: asyncio.Task[None]) -> None:
        del self.running[task]
        if not self.running:
            self.idle.set()
        self._admit()

    async def _run_one(self, item: Reservation | Unsorted) -> None:
        """Run one task; one whose lane is not known yet is sorted first, its module imported
        in the loop's executor (``TaskBuffer.sort``): an import holds neither the loop, whose
        other tasks run meanwhile, nor this task behind the worker threads. Sorted to the
        threads, or aside, or handed back as the stop cancels its wait, it is no longer this
        lane's to end: the import hands it on once it returns."""
        reservation = reservation_of(item)
        attempt_of.set(reservation)  # in this lane task's own context (``blocked_task``)
        ours = not isinstance(item, Unsorted)
        try:
            if isinstance(item, Unsorted):
                ours = await asyncio.to_thread(self.buffer.sort, item) is not None
                if not ours:
                    return
            if self.looks_before_start(reservation) and not await asyncio.to_thread(
                self.admit, reservation
            ):
                return  # handed back, recorded as cancelled, or waiting out of the way for its turn
            started_ms = await self._begun(reservation)
            if started_ms is None:
                return
            finish = await self.executor.arun(reservation, started_ms)
            self.ended(reservation)
            if self.sync_ack:
                # Submitted here, on the loop: a cancel now ends the wait, not the write.
                written = self.writer.submit_written(finish)
                await await_cut_short(asyncio.to_thread(written.wait))
            else:
                self.writer.submit_finish(finish)
            self.on_task_done()
        except asyncio.CancelledError:
            # Handed back, as a thread still running at the deadline is: no outcome is
            # written, its lease lapses and the reaper settles it.
            self.handed_back += ours
        except BaseException:
            # The executor records every task error: this is the lane's own failure, fatal as
            # a worker thread's is (its lease would otherwise be renewed with no one on it).
            logger.critical("Event loop task runner died", exc_info=True)
            self.on_crash()
        finally:
            if ours:
                self.buffer.done(on_loop=True)

    async def _begun(self, reservation: Reservation) -> int | None:
        """Start an attempt (``begin``), off the loop when its start notice is written before
        it runs (``starts_written_first``): that is a Redis call, which held every other async
        task of the process for as long as Redis took to answer, and had the monitor name the
        task as making a blocking call."""
        if self.starts_written_first(reservation):
            return await asyncio.to_thread(self.begin, reservation)
        return self.begin(reservation)

    def stop(self) -> None:
        """Start no more tasks; the running ones go on (``finish_running`` bounds them)."""
        self.stopping.set()

    def finish_running(self, deadline: float) -> None:
        """Let running tasks end until ``deadline`` (monotonic), cancel the rest, stop the loop."""
        self.idle.wait(max(0.0, deadline - time.monotonic()))
        self._finishing.set()
        self._call_soon(self._cancel_and_stop)

    def _cancel_and_stop(self) -> None:
        # A task that ended on this turn of the loop is still listed (``_ended`` runs on the
        # next): it is not cancelled, nor counted.
        still_running = [task for task in self.running if not task.done()]
        if not still_running:
            self._stop_loop()
            return
        logger.warning(
            "Grace period over, cancelling async tasks count=%d (one the cancel stops is left "
            "to the reaper once its lease lapses; one that catches it and ends is recorded)",
            len(still_running),
        )
        for task in still_running:
            task.cancel()
        gathered = asyncio.gather(*self.running, return_exceptions=True)
        gathered.add_done_callback(lambda _: self._stop_loop())

    def in_flight(self) -> list[Reservation]:
        """Return the attempts the loop has not finished (from another thread): copied in one
        call, which holds the GIL throughout, while the loop's thread may change them."""
        return list(self.running.values())

    def cpu_s(self) -> float | None:
        """Return the CPU time the loop's thread has used, in seconds (from another thread);
        None before it ran, or where the system keeps no CPU clock per thread."""
        if self._cpu_clock is None:
            return None
        try:
            return time.clock_gettime(self._cpu_clock)
        except OSError:  # the thread ended
            return None

    def blocked_task(self) -> Reservation | None:
        """Return the task whose code the loop runs now (from another thread): the attempt
        whose asyncio task is current, or that started it, or that scheduled the callback the
        loop runs (``call_soon``, ``call_later``, ``add_done_callback``: no task is current
        then, and it was named "unknown"); None between tasks."""
        event_loop = self.event_loop
        return None if event_loop is None else running_attempt(event_loop, self.ident)


def _report_loop_error(event_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Log what asyncio reports on the lane's loop (work a task left running failed, its error
    never read, or was destroyed pending; a callback it scheduled raised) in the worker's log,
    naming the task that started it: asyncio's own handler printed it bare to stderr, outside
    the log format (a JSON log's lines broken), naming no task."""
    culprit = reported_attempt(context)
    lease = culprit.lease if culprit is not None else None
    logger.error(
        "Event loop error task_id=%s path=%s: %s",
        lease.task_id if lease else "unknown",
        lease.task_path if lease else "unknown",
        context.get("message", "an error in a callback"),
        exc_info=context.get("exception"),
    )


def _end_leftovers(event_loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on the stopped loop (work tasks started and left running, a
    connection close) and let it end, as ``asyncio.run`` does: its ``finally`` blocks run, and
    nothing is destroyed pending. What ignores the cancel gets ``LEFTOVER_S``, then is named
    and left behind: it was dropped without a word, its ``finally`` blocks unrun."""
    leftovers = asyncio.all_tasks(event_loop)
    if not leftovers:
        return
    for leftover in leftovers:
        leftover.cancel()
    ended = _run_at_most(event_loop, leftovers)
    for each in leftovers & ended:
        if not each.cancelled() and (error := each.exception()) is not None:
            logger.warning(
                "Work an async task left running failed at shutdown error=%r task_id=%s path=%s",
                error,
                *task_named(each.get_context().get(attempt_of)),
            )
    if left := leftovers - ended:
        logger.warning(
            "Work async tasks left running did not end within %gs of its cancel at shutdown "
            "count=%d tasks=%s (the process exits without it: its finally blocks do not run)",
            LEFTOVER_S,
            len(left),
            listed_values(
                [":".join(task_named(each.get_context().get(attempt_of))) for each in left]
            ),
        )


def _close_async_generators(event_loop: asyncio.AbstractEventLoop) -> None:
    """Close the async generators that tasks left open, as ``asyncio.run`` does: their
    ``finally`` blocks run, given ``LEFTOVER_S`` as work left running is. One whose ``finally``
    waited for good held the lane's thread past the stop, and one that raised ``SystemExit``
    or stopped the loop there ended it: a burst whose every task succeeded exited 5
    (docs/worker.md, Two lanes)."""
    if not _run_at_most(event_loop, {event_loop.shutdown_asyncgens()}):
        logger.warning(
            "Async generators that tasks left open did not close within %gs at shutdown; "
            "the process exits without waiting for their finally blocks",
            LEFTOVER_S,
        )


def _run_at_most(
    event_loop: asyncio.AbstractEventLoop, awaited: Iterable[Awaitable[object]]
) -> set[asyncio.Future[object]]:
    """Run the stopped loop until ``awaited`` end, or for ``LEFTOVER_S``; return those that
    ended. Task code on the loop may raise ``SystemExit`` or ``KeyboardInterrupt`` (asyncio
    lets it out of the loop) or stop the loop (``loop.stop()`` in a ``finally``, where
    ``run_until_complete`` raised RuntimeError and ended the lane's thread): the wait goes on.
    What the task code raised is reported with the rest, by the caller or asyncio's handler."""
    futures: set[asyncio.Future[object]] = {
        asyncio.ensure_future(each, loop=event_loop) for each in awaited
    }
    waiting = event_loop.create_task(asyncio.wait(futures, timeout=LEFTOVER_S))
    waiting.add_done_callback(lambda _: event_loop.stop())
    while not waiting.done():
        with suppress(SystemExit, KeyboardInterrupt):
            event_loop.run_forever()
    done, _ = waiting.result()
    return done


class LoopMonitor(RoleThread):
    """Report an event loop that stopped turning: a task in it made a blocking call.

    It wakes only while async tasks, or work they left running, run. When the loop misses its
    beat by ``BLOCKED_S``, it notes which task the loop runs, and again as it waits for the
    loop to turn: tasks started on one turn can block it each in turn. Once the loop turns,
    one WARNING names each task that held it ``BLOCKED_S`` or more (or the one that held it
    longest, if that was ``SHARED_BLOCK_S``), and for how long. A task that holds it past
    ``hold_limit`` is named at once, while it holds it (worker/loop_hold.py).
    """

    def __init__(
        self,
        lane: EventLoopLane,
        on_crash: Callable[[], None],
        hold_limit: LoopHoldLimit | None = None,
    ) -> None:
        super().__init__("threadmill-loop-monitor", on_crash)
        self.lane = lane
        self.hold_limit = hold_limit

    def wake(self) -> None:
        self.lane.busy.set()  # end a wait for tasks to run: the monitor then sees it stops

    def loop(self) -> None:
        while not self.stopping.is_set():
            self.lane.busy.wait()
            if self.stopping.wait(BEAT_S):
                return
            if self.lane.busy.is_set() and time.monotonic() - self.lane.last_beat > BLOCKED_S:
                self._follow_stall()

    def _follow_stall(self) -> None:
        """Note each task seen holding the loop until it turns, then name those that held it.

        One task seen is taken to have held the loop since its last beat. With several seen,
        the first is credited only from when it was seen: many tasks started or ended on one
        turn (hundreds at a time under a high ``--async-concurrency``) hold the loop a moment
        each, and crediting the first with the whole stall accused a task that blocked nothing.
        A stall through which the monitor itself woke late, by over half its length, is the
        process waiting for CPU or the GIL, whichever task was current: nobody is named, unless
        the loop's thread ran meanwhile (``_ran_on``).
        """
        since = self.lane.last_beat
        holds, late_s, ran_s = self._note_holds(since)
        turned = self.lane.last_beat if self.lane.last_beat != since else time.monotonic()
        if late_s > (turned - holds[0][1]) / 2 and not _ran_on(ran_s, holds):
            logger.debug(
                "Event loop stalled for_ms=%d while its monitor woke late_ms=%d: the process "
                "was short of CPU (a CPU quota, a busy host) or of the GIL, no task held it",
                (turned - since) * 1000,
                late_s * 1000,
            )
            return
        seen = [culprit for culprit, _ in holds if culprit is not None]
        tasks_seen = len({id(culprit) for culprit in seen})
        if tasks_seen <= 1:
            _report_blocked(seen[0] if seen else None, turned - since)
            return
        ends = [start for _, start in holds[1:]] + [turned]
        held = [(culprit, end - start) for (culprit, start), end in zip(holds, ends, strict=True)]
        longest = max(held, key=lambda hold: hold[1])
        named = [hold for hold in held if hold[1] >= BLOCKED_S] or (
            [longest] if longest[1] >= SHARED_BLOCK_S else []
        )
        for culprit, held_s in named:
            _report_blocked(culprit, held_s)
        if not named:
            logger.debug(
                "Event loop busy for_ms=%d running tasks=%d in turn, none held it %d ms: "
                "no blocking call, many tasks started or ended at once",
                (turned - since) * 1000,
                tasks_seen,
                SHARED_BLOCK_S * 1000,
            )

    def _note_holds(
        self, since: float
    ) -> tuple[list[tuple[Reservation | None, float]], float, float]:
        """Note each task seen holding the loop, in turn, until it turns (or the monitor
        stops); return them, each with since when, how much later than it asked the monitor
        itself woke, in all, and the CPU the loop's thread ran from the first look to the last
        (0 where the system cannot tell; read at each look, as the thread may end once the loop
        turns). The task seen holding it past the hold limit, counted as ``_follow_stall``
        counts it, is passed to the limit at once, once; not while the monitor woke late,
        unless the loop's thread ran meanwhile (``_ran_on``)."""
        look_s = BEAT_S / 5
        holds = [(self.lane.blocked_task(), time.monotonic())]
        ran_from = self.lane.cpu_s()
        late_s = ran_s = 0.0
        limit = self.hold_limit
        while self.lane.last_beat == since:
            asked = time.monotonic()
            if self.stopping.wait(look_s):
                break
            now = time.monotonic()
            late_s += max(0.0, now - asked - look_s)
            culprit = self.lane.blocked_task()
            if culprit is not None and culprit is not holds[-1][0]:
                holds.append((culprit, now))
            ran_to = self.lane.cpu_s()
            if ran_from is not None and ran_to is not None:
                ran_s = ran_to - ran_from
            held_s = now - (since if len(holds) == 1 else holds[-1][1])
            # Not while the monitor itself woke late: the process is short of CPU or the GIL.
            on_time = late_s <= (now - holds[0][1]) / 2
            if limit and held_s > limit.limit_s and (on_time or _ran_on(ran_s, holds)):
                limit.passed(holds[-1][0], held_s)
                limit = None
        return holds, late_s, ran_s


def _ran_on(ran_s: float, holds: list[tuple[Reservation | None, float]]) -> bool:
    """Tell whether the loop's thread ran ``ran_s`` of CPU, ``BLOCKED_S`` or more, with one task
    seen holding the loop: that task's own code held it, in Python, which holds the GIL, so the
    monitor's looks woke late waiting for it. A loop short of CPU or of the GIL turns in the
    moment it gets either, and runs next to nothing meanwhile."""
    seen = {id(culprit) for culprit, _ in holds if culprit is not None}
    return len(seen) == 1 and ran_s >= BLOCKED_S


def _report_blocked(culprit: Reservation | None, held_s: float) -> None:
    task_id, path = task_named(culprit)
    logger.warning(
        "Event loop blocked task_id=%s path=%s for_ms=%d: a blocking call inside an "
        "async task (time.sleep, a sync ORM query, a sync client) held every other async "
        "task; await an async call or use sync_to_async (docs/worker.md, What blocks the "
        "loop)",
        task_id,
        path,
        held_s * 1000,
    )
