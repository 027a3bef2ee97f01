"""How many worker threads the elastic pool wants: ``--threads MIN --max-threads MAX``.

Threads float between the two (docs/worker.md, The elastic pool). Threads are added while every
thread is busy and tasks have waited in the buffer longer than ``--target-wait``, unless the
process already uses the core it can get (the GIL: more threads cannot run more Python); a
step adds as many as the CPU left to spare would carry. Each step is judged on the finish rate
once its threads got going: kept when the rate rose in proportion, kept in part when it rose
less, taken back (and growth paused) when it did not rise. A pool whose process uses a core
while every thread has work tries half as many threads, judged the same way: kept unless the
rate fell, else restored (and shrinking paused). Threads the pool had spare for a whole
``--thread-idle`` (never all busy at once) are retired.
"""

import math
from dataclasses import dataclass, field

MIN_GAIN = 0.05  # a growth step must raise the finish rate by this share; a shrink may lower it
# The share of the CPU a process can get (a core, or less: PoolLimits.cpu_share) above which
# more threads only fight for the GIL.
CPU_BOUND = 0.85
FIRST_PAUSE_S = 5.0  # growth (or shrinking) pauses this long after a change taken back; doubles
MAX_PAUSE_S = 60.0
MAX_GROWTH = 3  # a step adds at most three times the threads there are: the pool quadruples
# A rate is told from at least this many finishes per thread: fewer say more about when tasks
# happened to end than about how fast the pool goes.
FINISHES_PER_THREAD = 2
# A change whose tasks are too long to show a rate by then is judged by the CPU alone.
MAX_TRIAL_S = 30.0
# A trial shrink follows two spans of at least this long at a core: on tasks that wait it costs
# their rate while it lasts, so a passing burst of CPU does not start one.
BOUND_SPAN_S = 2.5


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolLimits:
    """What ``threadmill_worker`` was asked for."""

    min_threads: int
    max_threads: int
    target_wait_s: float
    idle_s: float
    # The CPU the process can get, in cores, at most one (the GIL): less where a CPU quota or
    # affinity leaves its processes less than a core each (worker/cpus.py). Measured against a
    # whole core, such a process never looked CPU-bound (docs/worker.md, The elastic pool).
    cpu_share: float = 1.0

    @property
    def elastic(self) -> bool:
        return self.max_threads > self.min_threads

    @property
    def cpu_bound(self) -> float:
        """The process CPU, in cores, above which more threads only fight for the GIL."""
        return CPU_BOUND * self.cpu_share

    @property
    def trial_s(self) -> float:
        """The shortest span a rate is measured over, before and after a change."""
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
    retiring: int = 0  # of ``threads``, those whose retire turns wait: they end as they take them

    @property
    def staying(self) -> int:
        """The threads the pool keeps once its retire turns are taken: what a change starts
        from. From ``threads``, a shrink decided while a step's threads still ran their tasks
        halved them too, and took the pool below MIN (docs/worker.md, The elastic pool)."""
        return self.threads - self.retiring


@dataclass(slots=True, kw_only=True)
class _Trial:
    """A change being judged: a growth step (``added`` above 0) or a trial shrink (below)."""

    added: int
    started: PoolSample  # the look that made the change, at the size before it
    rate_before: float | None  # finishes per second before the change; None: too few to tell
    measured_from: PoolSample | None = None  # the first look once the change has settled

    @property
    def settle_s(self) -> float:
        """About one task's run, the time the new threads' first results take: the threads
        over the rate before the step (Little's law, all of them busy); 0 when unknown."""
        return self.started.threads / self.rate_before if self.rate_before else 0.0

    def in_effect(self, sample: PoolSample) -> bool:
        """Tell whether the pool has its new size: added threads start at once, retired ones
        end as they take their turns, which wait behind the tasks in the buffer."""
        return self.added > 0 or sample.threads <= self.started.staying + self.added


@dataclass(slots=True)
class _Pause:
    """No trial of one kind until ``until``: FIRST_PAUSE_S after a change taken back, doubling
    up to MAX_PAUSE_S while they are, back to the first once one is kept."""

    until: float = 0.0
    next_s: float = FIRST_PAUSE_S

    def holds(self, at: float) -> bool:
        return at < self.until

    def begin(self, at: float) -> None:
        self.until = at + self.next_s
        self.next_s = min(self.next_s * 2, MAX_PAUSE_S)

    def reset(self) -> None:
        self.next_s = FIRST_PAUSE_S


@dataclass(slots=True)
class PoolSizer:
    """Decide, from samples, how many threads to add (positive) or retire (negative)."""

    limits: PoolLimits
    _previous: PoolSample | None = None
    _at_size: PoolSample | None = None  # the first look at the pool's current size
    _backlog_since: float | None = None
    _trial: _Trial | None = None
    _growth: _Pause = field(default_factory=_Pause)
    _shrinking: _Pause = field(default_factory=_Pause)
    _spare_look: PoolSample | None = None  # when the look at spare threads began, and its size
    _most_busy: int = 0  # the most threads busy at once since then
    _bound_since: PoolSample | None = None  # the first look of a span with work for every thread
    _bound_before: bool = False  # the span before it did too, and the process used a core
    _ceiling: int | None = None  # the most threads the system allowed, once it refused one
    _retiring_to: int | None = None  # the size a trial shrink retires to, until it is reached

    def decide(self, sample: PoolSample) -> tuple[int, str]:
        """Return the change in threads and why ("" when none)."""
        previous, self._previous = self._previous, sample
        if self._trial is not None:
            return self._judge(self._trial, sample)
        if self._at_size is None or self._at_size.threads != sample.threads:
            self._at_size = sample  # grown, retired or replaced: the rate starts again
        spare = min(self._spare(sample), sample.staying - self.limits.min_threads)
        if spare > 0:
            return -spare, "idle"
        if shrink := self._shrink(sample):
            return -shrink, "the process used a core and every thread was busy"
        backlogged = sample.waiting > 0 and sample.busy >= sample.threads
        if not backlogged:
            self._backlog_since = None
            return 0, ""
        if self._backlog_since is None:
            self._backlog_since = sample.at
        waited = sample.at - self._backlog_since >= self.limits.target_wait_s
        most = self.limits.max_threads if self._ceiling is None else self._ceiling
        if not waited or sample.threads >= most or self._growth.holds(sample.at):
            return 0, ""
        cores = _cores(previous, sample) if previous is not None else None
        if cores is not None and cores >= self.limits.cpu_bound:
            return 0, ""
        step = min(most - sample.threads, _step(sample.threads, cores, self.limits.cpu_bound))
        self._trial = _Trial(added=step, started=sample, rate_before=_rate(self._at_size, sample))
        self._retiring_to = None  # grown again: a shrink's threads still to end hold nothing back
        self._backlog_since = None
        return step, "tasks waited and every thread was busy"

    def refused(self, added: int) -> None:
        """The system refused threads of the change just decided (a thread or memory limit):
        only ``added`` of them started. Grow no larger from now on, and judge a step by the
        threads that started."""
        if self._previous is not None:
            self._ceiling = self._previous.threads + added
        trial = self._trial
        if trial is None:
            return
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

    def _shrink(self, sample: PoolSample) -> int:
        """Start a trial shrink, and return how many threads it retires (half, never below
        MIN; 0: none), once the process used a core over a span in which every thread had work
        (busy, or a task waiting for it): Python holds the GIL, so threads past what a core runs
        only wait their turn (docs/worker.md, The elastic pool).

        Spans are at least BOUND_SPAN_S long; the one the trial is measured against follows one
        that used a core too (one begun before the work turned CPU-bound would mix in the rate
        from before), and lasts until it shows a rate (two results per thread, up to
        MAX_TRIAL_S), so the trial has one to compare with.
        """
        if self._retiring_to is not None and sample.threads > self._retiring_to:
            return 0  # the last trial's threads still end as they take their turns
        self._retiring_to = None
        count = min(sample.staying // 2, sample.staying - self.limits.min_threads)
        begun = self._bound_since
        had_work = sample.busy >= sample.threads or sample.waiting > 0
        if count <= 0 or not had_work or begun is None or begun.threads != sample.threads:
            self._bound_since, self._bound_before = (sample if had_work else None), False
            return 0
        span = sample.at - begun.at
        if span < max(self.limits.trial_s, BOUND_SPAN_S):
            return 0
        at_core = _cores(begun, sample) >= self.limits.cpu_bound
        if not (at_core and self._bound_before):
            self._bound_since, self._bound_before = sample, at_core
            return 0
        rate = _rate(begun, sample)
        if (rate is None and span < MAX_TRIAL_S) or self._shrinking.holds(sample.at):
            return 0
        self._trial = _Trial(added=-count, started=sample, rate_before=rate)
        self._retiring_to = sample.staying - count
        self._bound_since, self._bound_before, self._backlog_since = None, False, None
        return count

    def _judge(self, trial: _Trial, sample: PoolSample) -> tuple[int, str]:
        """Once the change has settled and shown a rate (or its tasks proved too long to show
        one), give the verdict on it."""
        if trial.measured_from is None:
            waited = sample.at - trial.started.at
            settled = waited >= min(trial.settle_s, MAX_TRIAL_S / 2)
            # Retired threads end after their current task: tasks longer than MAX_TRIAL_S
            # held every other decision (growth, idle threads) back on the trial.
            if settled and (trial.in_effect(sample) or waited >= MAX_TRIAL_S):
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
        if trial.added < 0:
            return self._judge_shrink(trial, since, sample, rate)
        return self._judge_growth(trial, since, sample, rate)

    def _judge_growth(
        self, trial: _Trial, since: PoolSample, sample: PoolSample, rate: float | None
    ) -> tuple[int, str]:
        """Keep the share of a step's threads that raised the rate; if its tasks are too long
        to show one, keep it while the CPU is not the limit."""
        if rate is None or trial.rate_before is None:
            if _cores(since, sample) >= self.limits.cpu_bound:
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
        self._growth.reset()
        return 0, ""

    def _take_back(self, sample: PoolSample, count: int, why: str) -> tuple[int, str]:
        """Retire ``count`` of a step's threads, and pause growth (longer each time)."""
        self._growth.begin(sample.at)
        return -count, why

    def _judge_shrink(
        self, trial: _Trial, since: PoolSample, sample: PoolSample, rate: float | None
    ) -> tuple[int, str]:
        """Keep a trial shrink unless the pool did less with tasks waiting for it: the rate
        fell by more than MIN_GAIN or, where no rate shows, the process used less than a core.
        Then restore its threads, and pause shrinking (longer each time)."""
        if rate is None or trial.rate_before is None:
            fell = _cores(since, sample) < self.limits.cpu_bound
            why = "the process used less than a core with fewer threads"
        else:
            fell = rate < trial.rate_before * (1 - MIN_GAIN)
            why = "the threads retired lowered the finish rate"
        if not (fell and sample.waiting):
            self._shrinking.reset()
            return 0, ""
        self._shrinking.begin(sample.at)
        self._retiring_to = None  # its threads come back
        return -trial.added, why


def _step(threads: int, cores: float | None, cpu_bound: float) -> int:
    """How many threads to add to ``threads`` that use ``cores`` of CPU (None: not known yet).

    As many as the CPU left below ``cpu_bound`` would carry if each new thread used what one uses
    now, so tasks that mostly wait reach their pool in a step or two instead of one half-step
    per trial; at least half as many again, at most MAX_GROWTH times as many again. The trial
    keeps only the share that raised the finish rate.
    """
    least = max(1, threads // 2)
    if cores is None:
        return least
    fits = threads * (cpu_bound / cores - 1) if cores > 0 else float("inf")
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
