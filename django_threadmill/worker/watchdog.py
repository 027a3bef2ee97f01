"""The watchdog: records tasks that outlive --task-timeout as FAILED and replaces their thread.

It sends their ``task_finished`` itself, from its own thread: the task's context is still in
use by the abandoned thread, which may run on. Each send runs in a fresh copy of the
watchdog's clean context, as each task runs in one of its worker thread's, so what one
timed-out task's receivers set is not the next one's; and the watchdog closes its stale
database connections around each, as a worker thread does around each task
(docs/observability.md, Signals).
"""

import logging
from collections.abc import Callable
from contextvars import copy_context
from typing import Protocol

from ..broker import Finish, Reservation
from ..exceptions import TaskTimeout
from .ack_writer import AckWriter
from .buffer import TaskBuffer
from .db_connections import close_stale_connections, close_thread_connections
from .executor import Executor
from .role import RoleThread
from .threads import Overdue, WorkerThread

logger = logging.getLogger(__name__)

MAX_CHECK_INTERVAL_S = 1.0  # how often running tasks are checked, at most
# How often they are checked, at least: a quarter of a tiny --task-timeout (1e-6) spun the
# watchdog on a CPU; a task then times out up to 10 ms late.
MIN_CHECK_INTERVAL_S = 0.01


class Abandon(Protocol):
    """Abandon a thread whose task is overdue, and replace it if asked (``WorkerPool``): what
    it ran and whether a thread took its place, or None."""

    def __call__(
        self, thread: WorkerThread, timeout_s: float, *, replace: bool
    ) -> tuple[Overdue, bool] | None: ...


class Watchdog(RoleThread):
    """Check running tasks against the timeout; a stuck one is failed and its thread replaced.

    Python cannot stop a thread, so the stuck thread is abandoned: it keeps running until its
    task returns, and its outcome is discarded (the attempt already ended as FAILED). It goes on
    watching through a stop's grace period, replacing no thread then (docs/worker.md, Shutdown).
    """

    def __init__(
        self,
        timeout_s: float,
        threads: list[WorkerThread],
        abandon: Abandon,
        executor: Executor,
        writer: AckWriter,
        buffer: TaskBuffer,
        on_task_done: Callable[[], None],
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__("threadmill-watchdog", on_crash)
        self.timeout_s = timeout_s
        self.threads = threads
        self.abandon = abandon  # the pool's: it starts a thread in the abandoned one's place
        self.executor = executor
        self.writer = writer
        self.buffer = buffer
        self.on_task_done = on_task_done  # a timed-out task counts toward --max-tasks too
        self.replacing = True  # the stop turns it off: no thread is started from then on

    def loop(self) -> None:
        try:
            self._watch()
        finally:  # what its receivers opened, as a worker thread closes what its tasks did
            close_thread_connections()

    def _watch(self) -> None:
        """Check the running tasks every quarter of the timeout (within bounds) until stopped."""
        interval_s = min(MAX_CHECK_INTERVAL_S, max(MIN_CHECK_INTERVAL_S, self.timeout_s / 4))
        while not self.stopping.wait(interval_s):
            for thread in list(self.threads):
                replace = self.replacing
                abandoned = self.abandon(thread, self.timeout_s, replace=replace)
                if abandoned is None:
                    continue
                (reservation, started_ms, run_ms), replaced = abandoned
                task_id = reservation.lease.task_id
                logger.error(
                    "Task timed out task_id=%s timeout_s=%s thread=%s (abandoned, %s)",
                    task_id,
                    self.timeout_s,
                    thread.name,
                    _fate(replace=replace, replaced=replaced),
                )
                error = TaskTimeout(
                    f"Task {task_id} ran longer than --task-timeout={self.timeout_s}s; the "
                    "worker stopped waiting for it. Make it faster or raise the timeout."
                )
                finish = self._timed_out(reservation, started_ms, error)
                # Its run time is its thread's: timed_out loaded the attempt again just now.
                self.writer.submit_finish(finish._replace(run_ms=run_ms))
                self.buffer.done()
                # Counted, so --max-tasks and --max-memory recycle a process whose abandoned
                # threads pile up.
                self.on_task_done()

    def _timed_out(self, reservation: Reservation, started_ms: int, error: TaskTimeout) -> Finish:
        """End the attempt as timed out, its ``task_finished`` sent in a fresh context, between
        checks of this thread's database connections (executor.run's, for a task)."""
        close_stale_connections()
        try:
            return copy_context().run(self.executor.timed_out, reservation, started_ms, error)
        finally:
            close_stale_connections()


def _fate(*, replace: bool, replaced: bool) -> str:
    """Say what became of an abandoned thread's place: the log said "replaced" of one the
    stop or the system left empty."""
    if replaced:
        return "replaced"
    if not replace:
        return "not replaced: the worker is stopping"
    return "not replaced: the system refused a new thread"
