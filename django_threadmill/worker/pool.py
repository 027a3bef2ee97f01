"""The worker threads of a process, and how many there are: ``--threads MIN --max-threads MAX``.

Threads float between the two (docs/worker.md, The elastic pool). Threads are added while every
thread is busy and tasks have waited in the buffer longer than ``--target-wait``, unless the
process already uses a core's worth of CPU (the GIL: more threads cannot run more Python); a
step adds as many as the CPU left to spare would carry. Each step is judged on the finish rate
once its threads got going: kept when the rate rose in proportion, kept in part when it rose
less, taken back (and growth paused) when it did not rise. Threads the pool had spare for a
whole ``--thread-idle`` (never all busy at once) are retired. Read-ahead follows the live
count.
"""

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .buffer import TaskBuffer
from .role import RoleThread
from .stop_calls import join_until
from .threads import Overdue, WorkerThread

logger = logging.getLogger(__name__)

MIN_GAIN = 0.05  # a growth step must raise the finish rate by this share to be kept
CPU_BOUND = 0.85  # process CPU, in cores, above which more threads only fight for the GIL
FIRST_PAUSE_S = 5.0  # growth pauses this long after a step that did not help; doubles
MAX_PAUSE_S = 60.0
MAX_GROWTH = 3  # a step adds at most three times the threads there are: the pool quadruples
# A rate is told from at least this many finishes per thread: fewer say more about when tasks
# happened to end than about how fast the pool goes.
FINISHES_PER_THREAD = 2
# A step whose tasks are too long to show a rate by then is judged by the CPU alone.
MAX_TRIAL_S = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolLimits:
    """What ``threadmill_worker`` was asked for."""

    min_threads: int
    max_threads: int
    target_wait_s: float
    idle_s: float

    @property
    def elastic(self) -> bool:
        return self.max_threads > self.min_threads

    @property
    def trial_s(self) -> float:
        """The shortest span a growth step's rate is measured over."""
        return max(0.25, 5 * self.target_wait_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolSample:
    """The pool as one look saw it."""

    at: float  # monotonic seconds
    threads: int
    busy: int
    waiting: int  # sync tasks in the buffer
    finished: int  # tasks the pool's threads finished (the event loop's are not theirs to judge)
    cpu_s: float  # process CPU time so far


@dataclass(slots=True, kw_only=True)
class _Trial:
    """A growth step being judged."""

    added: int
    started: PoolSample  # the look that made the step, at the size before it
    rate_before: float | None  # finishes per second before the step; None: too few to tell
    measured_from: PoolSample | None = None  # the first look once the step has settled

    @property
    def settle_s(self) -> float:
        """About one task's run, the time the new threads' first results take: the threads
        over the rate before the step (Little's law, all of them busy); 0 when unknown."""
        return self.started.threads / self.rate_before if self.rate_before else 0.0


@dataclass(slots=True)
class PoolSizer:
    """Decide, from samples, how many threads to add (positive) or retire (negative)."""

    limits: PoolLimits
    _previous: PoolSample | None = None
    _at_size: PoolSample | None = None  # the first look at the pool's current size
    _backlog_since: float | None = None
    _trial: _Trial | None = None
    _paused_until: float = 0.0
    _pause_s: float = FIRST_PAUSE_S
    _spare_look: PoolSample | None = None  # when the look at spare threads began, and its size
    _most_busy: int = 0  # the most threads busy at once since then
    _ceiling: int | None = None  # the most threads the system allowed, once it refused one

    def decide(self, sample: PoolSample) -> tuple[int, str]:
        """Return the change in threads and why ("" when none)."""
        previous, self._previous = self._previous, sample
        if self._trial is not None:
            return self._judge(self._trial, sample)
        if self._at_size is None or self._at_size.threads != sample.threads:
            self._at_size = sample  # grown, retired or replaced: the rate starts again
        spare = min(self._spare(sample), sample.threads - self.limits.min_threads)
        if spare > 0:
            return -spare, "idle"
        backlogged = sample.waiting > 0 and sample.busy >= sample.threads
        if not backlogged:
            self._backlog_since = None
            return 0, ""
        if self._backlog_since is None:
            self._backlog_since = sample.at
        waited = sample.at - self._backlog_since >= self.limits.target_wait_s
        most = self.limits.max_threads if self._ceiling is None else self._ceiling
        if not waited or sample.threads >= most or sample.at < self._paused_until:
            return 0, ""
        cores = _cores(previous, sample) if previous is not None else None
        if cores is not None and cores >= CPU_BOUND:
            return 0, ""
        step = min(most - sample.threads, _step(sample.threads, cores))
        self._trial = _Trial(added=step, started=sample, rate_before=_rate(self._at_size, sample))
        self._backlog_since = None
        return step, "tasks waited and every thread was busy"

    def refused(self, added: int) -> None:
        """The system refused threads of the step just decided (a thread or memory limit):
        only ``added`` of them started. Judge those alone, and grow no larger from now on."""
        trial = self._trial
        if trial is None:
            return
        self._ceiling = trial.started.threads + added
        trial.added = added
        if not added:
            self._trial = None

    def _spare(self, sample: PoolSample) -> int:
        """Threads that were spare for the whole last ``--thread-idle``: the fewest idle at any
        look (0 until one has passed at this size).

        Counted for the pool, not per thread: the buffer hands tasks to its threads in turn, so
        under a light steady load every thread runs one now and then and none is idle long.
        """
        begun = self._spare_look
        if begun is None or begun.threads != sample.threads:
            self._spare_look, self._most_busy = sample, sample.busy
            return 0
        self._most_busy = max(self._most_busy, sample.busy)
        if sample.at - begun.at < self.limits.idle_s:
            return 0
        spare = sample.threads - self._most_busy
        self._spare_look, self._most_busy = sample, sample.busy
        return spare

    def _judge(self, trial: _Trial, sample: PoolSample) -> tuple[int, str]:
        """Once the step has settled and shown a rate, keep the share of its threads that
        raised the rate; if its tasks are too long to show one, keep it while the CPU is not
        the limit."""
        if trial.measured_from is None:
            if sample.at - trial.started.at >= min(trial.settle_s, MAX_TRIAL_S / 2):
                trial.measured_from = sample
            return 0, ""
        since = trial.measured_from
        span = sample.at - since.at
        rate = _rate(since, sample)
        awaiting_rate = rate is None and trial.rate_before is not None and span < MAX_TRIAL_S
        if span < self.limits.trial_s or awaiting_rate:
            return 0, ""
        self._trial = None
        self._at_size = since
        if rate is None or trial.rate_before is None:
            if _cores(since, sample) >= CPU_BOUND:
                return self._take_back(sample, trial.added, "the threads added only used CPU")
            return self._kept()
        gain = rate / trial.rate_before - 1
        if gain < MIN_GAIN:
            return self._take_back(
                sample, trial.added, "the threads added did not raise the finish rate"
            )
        # Each thread that paid raised the rate by 1/threads-before-the-step of it: the gain,
        # counted in threads, is how many paid (all of them when the rate rose in proportion).
        kept = min(trial.added, math.ceil(gain * trial.started.threads))
        if kept < trial.added:
            return self._take_back(
                sample,
                trial.added - kept,
                "the threads added raised the finish rate by less than their share",
            )
        return self._kept()

    def _kept(self) -> tuple[int, str]:
        self._pause_s = FIRST_PAUSE_S
        return 0, ""

    def _take_back(self, sample: PoolSample, count: int, why: str) -> tuple[int, str]:
        """Retire ``count`` of a step's threads, and pause growth (longer each time)."""
        self._paused_until = sample.at + self._pause_s
        self._pause_s = min(self._pause_s * 2, MAX_PAUSE_S)
        return -count, why


def _step(threads: int, cores: float | None) -> int:
    """How many threads to add to ``threads`` that use ``cores`` of CPU (None: not known yet).

    As many as the CPU left below CPU_BOUND would carry if each new thread used what one uses
    now, so tasks that mostly wait reach their pool in a step or two instead of one half-step
    per trial; at least half as many again, at most MAX_GROWTH times as many again. The trial
    keeps only the share that raised the finish rate.
    """
    least = max(1, threads // 2)
    if cores is None:
        return least
    fits = threads * (CPU_BOUND / cores - 1) if cores > 0 else float("inf")
    return int(min(MAX_GROWTH * threads, max(least, fits)))


def _rate(since: PoolSample, now: PoolSample) -> float | None:
    """Finishes per second from ``since`` to ``now``; None while there were fewer than
    FINISHES_PER_THREAD per thread."""
    finished, span = now.finished - since.finished, now.at - since.at
    if span <= 0 or finished < FINISHES_PER_THREAD * now.threads:
        return None
    return finished / span


def _cores(earlier: PoolSample, later: PoolSample) -> float:
    """Return the CPU the process used between two samples, in cores."""
    span = later.at - earlier.at
    return (later.cpu_s - earlier.cpu_s) / span if span > 0 else 0.0


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
        self.readahead = readahead  # live threads -> how many tasks may wait in the buffer
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
        self.buffer.resize(self.readahead(self.live_count()))
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
        self.buffer.resize(self.readahead(self.live_count() - count))

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
        self.buffer.resize(self.readahead(self.live_count()))
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

    def join(self, deadline: float) -> None:
        """Wait until every thread has ended or been abandoned by the watchdog (a task past
        --task-timeout is not waited for), or until ``deadline`` (monotonic)."""
        for thread in list(self.threads):
            if thread.ident is None:
                continue
            thread.settled.wait(max(0.0, deadline - time.monotonic()))
            if not thread.abandoned:
                join_until(thread, deadline)

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
            live = self.live()
            finished = self._finished()
        return PoolSample(
            at=time.monotonic(),
            threads=len(live),
            busy=sum(t.busy for t in live),
            waiting=self.buffer.sync_waiting(),
            finished=finished,
            cpu_s=cpu_s,
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
                    sample.threads,
                    sample.threads + change,
                    why,
                )
