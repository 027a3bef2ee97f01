"""The worker threads of a process, and how many there are: ``--threads MIN --max-threads MAX``.

Threads float between the two (docs/worker.md, The elastic pool). Threads are added while every
thread is busy and tasks have waited in the buffer longer than ``--target-wait``, unless the
process already uses a core's worth of CPU (the GIL: more threads cannot run more Python); a
step adds as many as the CPU left to spare would carry. A step that does not raise the finish
rate is taken back, and growth pauses; a thread idle for ``--thread-idle`` is retired.
Read-ahead follows the live count.
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .buffer import TaskBuffer
from .role import RoleThread
from .threads import WorkerThread

logger = logging.getLogger(__name__)

MIN_GAIN = 0.05  # a growth step must raise the finish rate by this share to be kept
CPU_BOUND = 0.85  # process CPU, in cores, above which more threads only fight for the GIL
FIRST_PAUSE_S = 5.0  # growth pauses this long after a step that did not help; doubles
MAX_PAUSE_S = 60.0
MAX_GROWTH = 3  # a step adds at most three times the threads there are: the pool quadruples


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
        """How long a growth step runs before its rate is judged."""
        return max(0.25, 5 * self.target_wait_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolSample:
    """The pool as one look saw it."""

    at: float  # monotonic seconds
    threads: int
    busy: int
    waiting: int  # sync tasks in the buffer
    finished: int  # tasks finished since the process started
    cpu_s: float  # process CPU time so far
    idle_for_s: float  # the longest any thread has been idle now (0 if all are busy)


@dataclass(slots=True)
class _Trial:
    """A growth step being judged: the rate before it, and when it was made."""

    added: int
    started: PoolSample
    rate_before: float


@dataclass(slots=True)
class PoolSizer:
    """Decide, from samples, how many threads to add (positive) or retire (negative)."""

    limits: PoolLimits
    _previous: PoolSample | None = None
    _backlog_since: float | None = None
    _trial: _Trial | None = None
    _paused_until: float = 0.0
    _pause_s: float = FIRST_PAUSE_S
    _rates: list[tuple[float, int]] = field(default_factory=list)  # (at, finished) history

    def decide(self, sample: PoolSample) -> tuple[int, str]:
        """Return the change in threads and why ("" when none)."""
        previous, self._previous = self._previous, sample
        self._rates = [(at, n) for at, n in self._rates if sample.at - at <= self.limits.trial_s]
        self._rates.append((sample.at, sample.finished))
        if self._trial is not None:
            return self._judge(sample)
        if sample.threads > self.limits.min_threads and sample.idle_for_s >= self.limits.idle_s:
            return -1, "idle"
        backlogged = sample.waiting > 0 and sample.busy >= sample.threads
        if not backlogged:
            self._backlog_since = None
            return 0, ""
        if self._backlog_since is None:
            self._backlog_since = sample.at
        waited = sample.at - self._backlog_since >= self.limits.target_wait_s
        if (
            not waited
            or sample.threads >= self.limits.max_threads
            or sample.at < self._paused_until
        ):
            return 0, ""
        cores = _cores(previous, sample) if previous is not None else None
        if cores is not None and cores >= CPU_BOUND:
            return 0, ""
        step = min(self.limits.max_threads - sample.threads, _step(sample.threads, cores))
        self._trial = _Trial(added=step, started=sample, rate_before=self._rate(sample))
        self._backlog_since = None
        return step, "tasks waited and every thread was busy"

    def _rate(self, sample: PoolSample) -> float:
        """Finishes per second over the recent window."""
        at, finished = self._rates[0]
        return (sample.finished - finished) / (sample.at - at) if sample.at > at else 0.0

    def _judge(self, sample: PoolSample) -> tuple[int, str]:
        """Keep the trial's threads if the rate rose; else take them back and pause growth."""
        trial = self._trial
        assert trial is not None
        elapsed = sample.at - trial.started.at
        if elapsed < self.limits.trial_s:
            return 0, ""
        self._trial = None
        rate = (sample.finished - trial.started.finished) / elapsed
        if rate >= trial.rate_before * (1 + MIN_GAIN):
            self._pause_s = FIRST_PAUSE_S
            return 0, ""
        self._paused_until = sample.at + self._pause_s
        self._pause_s = min(self._pause_s * 2, MAX_PAUSE_S)
        return -trial.added, "the threads added did not raise the finish rate"


def _step(threads: int, cores: float | None) -> int:
    """How many threads to add to ``threads`` that use ``cores`` of CPU (None: not known yet).

    As many as the CPU left below CPU_BOUND would carry if each new thread used what one uses
    now, so tasks that mostly wait reach their pool in a step or two instead of one half-step
    per trial; at least half as many again, at most MAX_GROWTH times as many again. The trial
    still takes back a step that did not raise the finish rate.
    """
    least = max(1, threads // 2)
    if cores is None:
        return least
    fits = threads * (CPU_BOUND / cores - 1) if cores > 0 else float("inf")
    return int(min(MAX_GROWTH * threads, max(least, fits)))


def _cores(earlier: PoolSample, later: PoolSample) -> float:
    """Return the CPU the process used between two samples, in cores."""
    span = later.at - earlier.at
    return (later.cpu_s - earlier.cpu_s) / span if span > 0 else 0.0


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

    def add(self, count: int, *, start: bool = True) -> None:
        with self._lock:
            for _ in range(count):
                self._numbered += 1
                thread = self.make_thread(self._numbered)
                self.threads.append(thread)
                if start:
                    thread.start()
        self.buffer.resize(self.readahead(self.live_count()))

    def retire(self, count: int) -> None:
        """Make ``count`` threads end after their current task: the next ones to take do."""
        for _ in range(count):
            self.buffer.retire_one()
        self.buffer.resize(self.readahead(self.live_count() - count))

    def replace(self) -> None:
        """Start a fresh thread in place of one the watchdog abandoned (no longer live)."""
        self.add(1)

    def live(self) -> list[WorkerThread]:
        """Threads that may still take tasks (not abandoned, not retired)."""
        return [t for t in self.threads if not (t.abandoned or t.retired)]

    def live_count(self) -> int:
        return len(self.live())

    def joinable(self) -> list[WorkerThread]:
        """Threads to wait for at shutdown: those the watchdog abandoned cannot be joined."""
        return [thread for thread in self.threads if not thread.abandoned]

    def sample(self, finished: int, cpu_s: float) -> PoolSample:
        now = time.monotonic()
        live = self.live()
        idle = [now - t.idle_since for t in live if not t.busy]
        return PoolSample(
            at=now,
            threads=len(live),
            busy=sum(t.busy for t in live),
            waiting=self.buffer.sync_waiting(),
            finished=finished,
            cpu_s=cpu_s,
            idle_for_s=max(idle, default=0.0),
        )


class PoolSizing(RoleThread):
    """Look at the pool every half ``--target-wait`` and apply the sizer's decisions."""

    def __init__(
        self,
        pool: WorkerPool,
        limits: PoolLimits,
        finished: Callable[[], int],
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__("threadmill-pool", on_crash)
        self.pool = pool
        self.sizer = PoolSizer(limits)
        self.finished = finished
        self.interval_s = max(0.01, limits.target_wait_s / 2)

    def loop(self) -> None:
        while not self.stopping.wait(self.interval_s):
            sample = self.pool.sample(self.finished(), time.process_time())
            change, why = self.sizer.decide(sample)
            if change > 0:
                self.pool.add(change)
            elif change < 0:
                self.pool.retire(-change)
            if change:
                logger.debug(
                    "Worker threads from=%d to=%d reason=%s",
                    sample.threads,
                    sample.threads + change,
                    why,
                )
