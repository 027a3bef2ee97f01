"""Worker threads: take a reserved task from the buffer, run it, hand the outcome to the writer."""

import threading
import time
from collections.abc import Callable
from contextvars import copy_context

from ..broker import Finish, Reservation
from ..codec.times import run_time_ms
from .buffer import Turn, Unsorted
from .db_connections import close_thread_connections, mark_worker_thread
from .isolation import keep_thread_caches
from .runner import RunnerParts, TaskRunner

# A task the watchdog gave up on: it, its start (ms, wall clock), how long it ran (ms, monotonic).
type Overdue = tuple[Reservation, int, int]


class WorkerThread(TaskRunner):
    """Run tasks until the buffer closes. Task errors never end this thread.

    A task that outlives ``--task-timeout`` is taken over by the watchdog: the thread is
    abandoned, its eventual outcome discarded (no signal, no log, no write), and a fresh thread
    takes its place.
    """

    def __init__(self, index: int, parts: RunnerParts, on_crash: Callable[[], None]) -> None:
        super().__init__(f"threadmill-worker-{index}", parts, on_crash)
        self.abandoned = False
        self.retired = False  # ended by the pool shrinking (worker/pool.py)
        self.busy = False  # running a task: read by the pool, without a lock
        self.finished = 0  # tasks this thread ran: the pool's finish rate (written here only)
        self._current: Reservation | None = None
        self._sorting: Reservation | None = None  # a task whose module this thread imports
        self._current_since = 0.0
        self._current_started_ms = 0
        # The running attempt's outcome while its task_finished receivers run, and whether a
        # stop took it to record (``take_decided``): then this thread does not.
        self._decided: Finish | None = None
        self._decided_taken = False
        self._lock = threading.Lock()
        # Set once the thread ended or the watchdog abandoned it: what a stop waits for.
        self.settled = threading.Event()

    def loop(self) -> None:
        mark_worker_thread()
        keep_thread_caches()
        try:
            self._take_and_run()
        finally:
            close_thread_connections()
            self.settled.set()

    def _take_and_run(self) -> None:
        """Run tasks until the buffer closes, the pool retires this thread or the watchdog
        abandons it."""
        while not self.abandoned:
            item = self.buffer.take()
            if item is Turn.CLOSED:
                return
            if item is Turn.RETIRE:
                self.retired = True
                self.buffer.retired()
                return
            self.busy = True
            reservation = self._sorted(item) if isinstance(item, Unsorted) else item
            if reservation is None:
                self.busy = False
                continue
            # In a fresh copy of this thread's context, which no task runs in: what one task
            # sets there is not the next one's (worker/isolation.py).
            ran = copy_context().run(self._run_one, reservation)
            if ran:  # counted once this thread is free: a recycle it sets off counts it out
                self.finished += 1
                self.on_task_done()

    def _sorted(self, unsorted: Unsorted) -> Reservation | None:
        """Import the module of a task the prefetcher could not sort (``TaskBuffer.sort``);
        return the task if it runs here. Busy meanwhile, the task named as this thread's
        (``current_task``): an import that never returns holds this thread as a task that
        never returns would, and a stop names it. The watchdog does not time it out: the
        task has not started."""
        with self._lock:
            self._sorting = unsorted.reservation
        try:
            return self.buffer.sort(unsorted)
        finally:
            with self._lock:
                self._sorting = None

    def _run_one(self, reservation: Reservation) -> bool:
        """Run ``reservation`` and hand its outcome to the writer; False if it did not run
        here (not admitted, or the watchdog took it over)."""
        started_ms = self.begin(reservation) if self.admit(reservation) else None
        if started_ms is None:
            self._done()
            return False
        with self._lock:
            self._current, self._current_since = reservation, time.monotonic()
            self._current_started_ms = started_ms
        finish = self.executor.run(
            reservation,
            started_ms,
            claim=self._claim,
            given_up=self._given_up,
            decided=self._note_decided,
        )
        if finish is None:
            return False  # the watchdog recorded this attempt as timed out and took over
        if not self._settle_decided():
            self.ended(reservation)
            self.writer.submit_finish(finish, wait=self.sync_ack)
        self._done()
        return True

    def _note_decided(self, finish: Finish) -> None:
        """Keep the attempt's outcome while its task_finished receivers run."""
        with self._lock:
            self._decided = finish

    def _settle_decided(self) -> bool:
        """Forget the kept outcome, its receivers done; tell whether a stop took it."""
        with self._lock:
            taken = self._decided_taken
            self._decided, self._decided_taken = None, False
            return taken

    def take_decided(self) -> Finish | None:
        """Take the outcome of an attempt whose task_finished receivers still run (from the
        stop, once the grace period is over), for the stop to record; None if there is none.

        The task ended: a slow receiver holding the thread must not leave it RUNNING, to be
        failed or run again by the reaper (an event loop's receivers are cut short instead).
        """
        with self._lock:
            finish, self._decided = self._decided, None
            self._decided_taken = finish is not None
            return finish

    def _done(self) -> None:
        """Say this thread runs nothing, then tell the buffer its task is done: in that order.
        The done may let a stop begin (``--burst`` found nothing left), and a thread the stop
        still saw busy was held to the grace period, reported running once it was over, and
        its process exited as forced (docs/worker.md, Shutdown)."""
        self.busy = False
        self.buffer.done()

    def _claim(self) -> bool:
        """End the running attempt here, before anything is said of its outcome; False if the
        watchdog ended it first (timed out). Either ends it, never both."""
        with self._lock:
            if self.abandoned:
                return False
            self._current = None
            return True

    def _given_up(self) -> bool:
        """Tell whether the watchdog timed out the running attempt already (it must not
        start); unlike ``_claim``, this leaves it to be timed out later."""
        return self.abandoned

    def current_task(self) -> Reservation | None:
        """Return the task this thread runs now, or whose module it imports (from another
        thread); None between tasks."""
        with self._lock:
            return self._sorting if self._current is None else self._current

    def abandon_if_overdue(self, timeout_s: float) -> Overdue | None:
        """Give up on the running task if it exceeded ``timeout_s``.

        Return the task, its start (ms, wall clock) and how long it ran (ms, monotonic), or
        None if nothing is overdue.
        """
        with self._lock:
            ran_s = time.monotonic() - self._current_since
            if self._current is None or self.abandoned or ran_s <= timeout_s:
                return None
            self.abandoned = True
            self.settled.set()
            return self._current, self._current_started_ms, run_time_ms(ran_s)
