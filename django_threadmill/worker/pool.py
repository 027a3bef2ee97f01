"""The worker threads of a process: started, added, retired and replaced, and the thread that
sizes the elastic pool by its sizer's decisions (worker/sizer.py). Read-ahead follows the
threads that stay (``staying``)."""

import logging
import threading
import time
from collections.abc import Callable

from .buffer import TaskBuffer
from .role import RoleThread
from .sizer import PoolLimits, PoolSample, PoolSizer
from .stop_calls import join_until
from .threads import Overdue, WorkerThread

logger = logging.getLogger(__name__)


def _ended(thread: WorkerThread) -> bool:
    """Tell whether ``thread`` was started and has ended (one made but not started has not)."""
    return thread.ident is not None and not thread.is_alive()


class WorkerPool:
    """The worker threads of one process: started, added, retired, replaced."""

    def __init__(
        self,
        make_thread: Callable[[int], WorkerThread],
        buffer: TaskBuffer,
        readahead: Callable[[int], int],
    ) -> None:
        self.make_thread = make_thread
        self.buffer = buffer
        self.readahead = readahead  # threads staying -> how many tasks may wait in the buffer
        self.threads: list[WorkerThread] = []
        self._lock = threading.Lock()
        self._numbered = 0
        self._finished_by_ended = 0  # what threads no longer in the list finished
        # The system refused the thread that was to replace an abandoned one (set by the
        # process: it recycles, as only a fresh process gets back the room they hold).
        self.on_replacement_refused: Callable[[], None] = lambda: None

    def add(
        self, count: int, *, start: bool = True, unless: threading.Event | None = None
    ) -> int | None:
        """Add ``count`` threads; return how many were added: fewer once the system refuses
        one (a thread or memory limit), which is logged, not fatal (the pool works on). None,
        and none added, when ``unless`` is set: checked under the lock the add takes."""
        with self._lock:
            if unless is not None and unless.is_set():
                return None
            added = self._add(count, start=start)
        self.buffer.resize(self.readahead(self.staying()))
        return added

    def _add(self, count: int, *, start: bool) -> int:
        """``add``, under ``self._lock``."""
        added = 0
        # Forget threads that ended (retired, or abandoned and done at last): a bursty
        # worker grows and shrinks for weeks. In place: the watchdog holds this list.
        ended = [t for t in self.threads if _ended(t)]
        self._finished_by_ended += sum(t.finished for t in ended)
        self.threads[:] = [t for t in self.threads if t not in ended]
        for _ in range(count):
            self._numbered += 1
            thread = self.make_thread(self._numbered)
            if start and not self._started(thread):
                break
            self.threads.append(thread)
            added += 1
        return added

    def _started(self, thread: WorkerThread) -> bool:
        """Start ``thread``; False, logged, if the system refuses it."""
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread"
            logger.warning(
                "Worker thread refused, the pool stays at threads=%d error=%s: the system "
                "allows no more threads, or no memory for their stacks. Lower --max-threads "
                "or --processes, or raise the limit (ulimit -u, ulimit -v, a container's pids "
                "limit).",
                self.live_count(),
                exc,
            )
            return False
        return True

    def retire(self, count: int) -> None:
        """Make ``count`` threads end after their current task: the next ones to take do."""
        for _ in range(count):
            self.buffer.retire_one()
        self.buffer.resize(self.readahead(self.staying()))

    def abandon_if_overdue(
        self, thread: WorkerThread, timeout_s: float, *, replace: bool
    ) -> tuple[Overdue, bool] | None:
        """Abandon ``thread`` if its task outlived ``timeout_s`` (the watchdog), and start a
        fresh thread in its place if ``replace``; return what ``thread`` ran and whether a
        thread took its place, or None.

        One step under the pool's lock, which its looks take too: a look between the two saw
        the pool a thread short, grew it into the gap, and the replacement then took it past
        --max-threads (docs/worker.md, The elastic pool). A replacement the system refuses is
        said (``on_replacement_refused``): the abandoned thread keeps its room while its task
        runs, so the pool stayed a thread short for good; with none left, it ran nothing.
        """
        with self._lock:
            overdue = thread.abandon_if_overdue(timeout_s)
            if overdue is None:
                return None
            if not replace:
                return overdue, False
            replaced = self._add(1, start=True) == 1
        self.buffer.resize(self.readahead(self.staying()))
        if not replaced:
            self.on_replacement_refused()
        return overdue, replaced

    def live(self) -> list[WorkerThread]:
        """Threads that may still take tasks: not abandoned, not retired, not ended (the buffer
        closed). Threads that had ended were counted: a recycling process reported its whole
        pool while one long task ran on, and the ``threadmill_worker_threads`` gauge counted
        it beside its replacement's (docs/worker.md, Recycling)."""
        return [t for t in self.threads if not (t.abandoned or t.retired or _ended(t))]

    def live_count(self) -> int:
        return len(self.live())

    def staying(self) -> int:
        """Live threads but those whose retire turns wait in the buffer: they end as they take
        them, behind the tasks there, and must not be counted on (docs/worker.md, The elastic
        pool). The turns first: a thread that took one says so once it is out of the live
        count (``TaskBuffer.retired``), so a look between the two counts one too few, never
        one too many."""
        retiring = self.buffer.retiring()
        return len(self.live()) - retiring

    def join(self, deadline: float, idle_until: float) -> None:
        """Wait until every thread has ended or been abandoned by the watchdog (a task past
        --task-timeout is not waited for): one running a task until ``deadline`` (the grace
        period), one between tasks until ``idle_until`` (monotonic both).

        The buffer is closed: a thread between tasks is only ending, which the grace period
        does not bound. Held to it, a thread just started when a stop came with
        ``--grace-period 0`` was reported running, and its process exited as forced."""
        for thread in list(self.threads):
            if thread.ident is None:
                continue
            thread.settled.wait(max(0.0, deadline - time.monotonic()))
            if not thread.abandoned:
                join_until(thread, deadline if thread.busy else idle_until)

    def settled(self) -> bool:
        """Tell whether every started thread has ended or been abandoned: what ``join`` waits
        for, without waiting."""
        return all(thread.settled.is_set() for thread in list(self.threads) if thread.ident)

    def joinable(self) -> list[WorkerThread]:
        """Threads to wait for at shutdown: those the watchdog abandoned cannot be joined."""
        return [thread for thread in self.threads if not thread.abandoned]

    def finished(self) -> int:
        """The tasks this pool's threads finished, those that ended included."""
        with self._lock:
            return self._finished()

    def _finished(self) -> int:
        """``finished``, under ``self._lock``."""
        return self._finished_by_ended + sum(t.finished for t in self.threads)

    def sample(self, cpu_s: float) -> PoolSample:
        with self._lock:  # never between an abandoned thread and its replacement
            retiring = self.buffer.retiring()  # first, as ``staying`` says
            live = self.live()
            finished = self._finished()
        return PoolSample(
            at=time.monotonic(),
            threads=len(live),
            busy=sum(t.busy for t in live),
            waiting=self.buffer.sync_waiting(),
            finished=finished,
            cpu_s=cpu_s,
            retiring=retiring,
        )


class PoolSizing(RoleThread):
    """Look at the pool every half ``--target-wait`` and apply the sizer's decisions."""

    def __init__(
        self,
        pool: WorkerPool,
        limits: PoolLimits,
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__("threadmill-pool", on_crash)
        self.pool = pool
        self.sizer = PoolSizer(limits)
        self.interval_s = max(0.01, limits.target_wait_s / 2)

    def loop(self) -> None:
        while not self.stopping.wait(self.interval_s):
            sample = self.pool.sample(time.process_time())
            change, why = self.sizer.decide(sample)
            if change > 0:
                # The stop may have begun since the look: a pool never grows once it did
                # (docs/worker.md, The elastic pool).
                added = self.pool.add(change, unless=self.stopping)
                if added is None:
                    return
                if added < change:
                    self.sizer.refused(added)
                    change = added
            elif change < 0:
                self.pool.retire(-change)
            if change:
                logger.debug(
                    "Worker threads from=%d to=%d reason=%s",
                    sample.staying,
                    sample.staying + change,
                    why,
                )
