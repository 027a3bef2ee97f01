"""The elastic pool gives back threads the GIL cannot use: once its process uses a core while
every thread has work, it tries half as many, kept unless the finish rate fell, else restored
with shrinking paused (docs/worker.md, The elastic pool).

A pool grown for tasks that wait (``--threads 2 --max-threads 64``) stayed at 64 threads for
good once the work turned CPU-bound: every thread stayed busy (none spare for
``--thread-idle``), growth stopped at a core, and a step was judged only once, as it was made.

The sizer is driven with a made-up clock and CPU; the real command shows a trial shrink made
and undone on tasks that wait, its CPU reading standing in for a core's worth.
"""

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.sizer import BOUND_SPAN_S, PoolLimits, PoolSample, PoolSizer
from tests.support import Command
from tests.worker import tasks

LIMITS = PoolLimits(min_threads=3, max_threads=16, target_wait_s=0.05, idle_s=30.0)
LOOK_S = 0.025  # the pool is looked at every half --target-wait
SHRINK = "the process used a core and every thread was busy"
LOWERED = "the threads retired lowered the finish rate"

# What the pool's threads do, by how many there are: (finishes per second, process CPU in cores).
type Work = Callable[[int], tuple[float, float]]


def cpu_bound(threads: int) -> tuple[float, float]:
    """Pure Python under the GIL: a core, and the same rate however many threads run it."""
    return 500.0, 1.0


def waiting(threads: int) -> tuple[float, float]:
    """Tasks that wait: the rate in proportion to the threads, next to no CPU."""
    return 100.0 * threads, 0.01 * threads


def waiting_beside_a_busy_core(threads: int) -> tuple[float, float]:
    """Tasks that wait, in a process whose other work (its event loop's tasks) uses a core."""
    return 100.0 * threads, 1.0


@dataclass
class SimulatedPool:
    """A pool under a steady backlog, looked at as the pool's thread does; it finishes and uses
    what ``work`` says for its threads. Added threads start at once; retired ones end
    ``retire_lag_s`` later (their turns wait behind the tasks in the buffer); the system allows
    ``ceiling`` threads. ``free`` threads are between tasks at every look, with ``waiting``
    tasks in the buffer."""

    work: Work
    threads: int = 16
    retire_lag_s: float = 0.0
    ceiling: int = 10_000
    free: int = 0
    waiting: int = 9
    sizer: PoolSizer = field(default_factory=lambda: PoolSizer(LIMITS))
    changes: list[tuple[float, int, int, str]] = field(default_factory=list)  # at, from, to, why
    _looks: int = 0
    _finished: float = 0.0
    _cpu_s: float = 0.0
    _retiring: list[tuple[float, int]] = field(default_factory=list)  # when, how many

    def run_for(self, seconds: float) -> list[tuple[float, int, int, str]]:
        """Look for ``seconds``; return the changes decided meanwhile."""
        first = len(self.changes)
        for _ in range(round(seconds / LOOK_S)):
            self._looks += 1
            at = self._looks * LOOK_S
            self.threads -= sum(count for due, count in self._retiring if due <= at)
            self._retiring = [(due, count) for due, count in self._retiring if due > at]
            rate, cores = self.work(self.threads)
            self._finished += rate * LOOK_S
            self._cpu_s += cores * LOOK_S
            look = PoolSample(
                at=at,
                threads=self.threads,
                busy=self.threads - self.free,
                waiting=self.waiting,
                finished=int(self._finished),
                cpu_s=self._cpu_s,
                retiring=sum(count for _, count in self._retiring),
            )
            change, why = self.sizer.decide(look)
            if change:  # as the pool logs it: from the threads that stay
                self.changes.append((at, look.staying, look.staying + change, why))
                self._apply(at, change)
        return self.changes[first:]

    def _apply(self, at: float, change: int) -> None:
        if change < 0:
            self._retiring.append((at + self.retire_lag_s, -change))
            return
        added = min(change, self.ceiling - self.threads)
        self.threads += added
        if added < change:
            self.sizer.refused(added)


def sizes(changes: list[tuple[float, int, int, str]]) -> list[tuple[int, int, str]]:
    return [(before, after, why) for _, before, after, why in changes]


def test_a_pool_grown_for_waiting_tasks_shrinks_to_the_minimum_once_they_turn_cpu_bound() -> None:
    pool = SimulatedPool(waiting, threads=3)
    pool.run_for(5.0)
    assert pool.threads == 16  # grown for tasks that wait
    pool.work = cpu_bound
    assert sizes(pool.run_for(25.0)) == [(16, 8, SHRINK), (8, 4, SHRINK), (4, 3, SHRINK)]
    assert pool.run_for(120.0) == []  # at MIN, and never below it


def test_a_trial_shrink_that_lowered_the_rate_is_undone_and_shrinking_backs_off() -> None:
    """The process uses a core, but its threads' tasks wait: half as many threads finish half
    as many. Each trial is undone, and the next comes after 5 s, then 10, 20, 40, 60 and 60."""
    pool = SimulatedPool(waiting_beside_a_busy_core)
    changes = pool.run_for(250.0)
    assert sizes(changes) == [(16, 8, SHRINK), (8, 16, LOWERED)] * 7
    undone = [at for at, _, after, _ in changes if after == 16]
    tried = [at for at, _, after, _ in changes if after == 8]
    waits = [next_try - at for at, next_try in zip(undone, tried[1:], strict=False)]
    assert [round(wait) for wait in waits] == [5, 10, 20, 40, 60, 60]


def test_a_trial_shrink_is_judged_once_its_threads_have_retired() -> None:
    """Retired threads end as they take their turns, behind the tasks in the buffer: judged
    before, the trial read the rate of the pool at its old size, found it as high, and kept
    the smaller one."""
    pool = SimulatedPool(waiting_beside_a_busy_core, retire_lag_s=2.0)
    (tried_at, *_), (undone_at, *undo) = pool.run_for(10.0)[:2]
    assert undo == [8, 16, LOWERED]
    assert undone_at - tried_at > 2.0


@pytest.mark.parametrize(
    ("cores_at_8", "second"),
    [
        (1.0, (8, 4, SHRINK)),
        (0.5, (8, 16, "the process used less than a core with fewer threads")),
    ],
)
def test_a_trial_shrink_on_tasks_too_long_to_show_a_rate_is_judged_by_the_cpu(
    cores_at_8: float, second: tuple[int, int, str]
) -> None:
    """Tasks of 20 s of wall time each: no rate shows in 30 s. Kept while the fewer threads
    still use a core, undone once they do not."""

    def long_tasks(threads: int) -> tuple[float, float]:
        return threads / 20.0, 1.0 if threads > 8 else cores_at_8

    changes = sizes(SimulatedPool(long_tasks).run_for(70.0))
    assert changes[:2] == [(16, 8, SHRINK), second]


@pytest.mark.parametrize(
    ("work", "free", "waiting_tasks"),
    [(waiting, 0, 9), (lambda threads: (500.0, 0.5), 0, 9), (cpu_bound, 1, 0)],
    ids=["tasks that wait", "half a core", "a thread spare"],
)
def test_no_trial_shrink_below_a_core_or_with_a_thread_spare_but_once_at_one_with_none(
    work: Work, free: int, waiting_tasks: int
) -> None:
    """A thread with no work is --thread-idle's to retire (after a whole idle spell)."""
    pool = SimulatedPool(work, free=free, waiting=waiting_tasks)
    assert pool.run_for(25.0) == []
    pool.work, pool.free, pool.waiting = cpu_bound, 0, 9
    assert sizes(pool.run_for(8.0))[:1] == [(16, 8, SHRINK)]


def test_a_passing_burst_of_cpu_starts_no_trial() -> None:
    """A trial on tasks that wait costs their rate while it lasts: a core used for one span of
    BOUND_SPAN_S and half the next starts none (a trial follows two spans at a core)."""
    pool = SimulatedPool(waiting_beside_a_busy_core)
    assert pool.run_for(1.5 * BOUND_SPAN_S) == []
    pool.work = waiting
    assert pool.run_for(30.0) == []


def test_a_thread_between_tasks_while_tasks_wait_has_work() -> None:
    """At every look a thread may be between two tasks: with tasks waiting, it is not spare."""
    pool = SimulatedPool(cpu_bound, free=1)
    assert sizes(pool.run_for(6.0))[:1] == [(16, 8, SHRINK)]


def test_a_trial_shrink_is_kept_when_the_work_ran_out_meanwhile() -> None:
    """Its rate fell for want of tasks, not of threads: none are restored to wait idle."""
    pool = SimulatedPool(cpu_bound)
    assert sizes(pool.run_for(5.1)) == [(16, 8, SHRINK)]
    pool.work, pool.free, pool.waiting = (lambda threads: (0.0, 0.0)), 8, 0
    assert pool.run_for(35.0) == []


def test_an_undo_the_system_refuses_in_part_sets_how_large_the_pool_may_grow() -> None:
    pool = SimulatedPool(waiting_beside_a_busy_core, ceiling=11)
    assert sizes(pool.run_for(6.0)) == [(16, 8, SHRINK), (8, 16, LOWERED)]
    assert pool.threads == 11  # 3 of the 8 started
    pool.work = waiting  # the CPU to spare again: growth would follow, but the system refuses
    pool.run_for(30.0)
    assert pool.threads == 11
    assert all(after <= 11 for _, _, after, _ in pool.changes[2:])


# The worker command, its CPU reading a core's worth once the test creates the file that
# argv[1] names (tasks that wait, in a process busy with other work), nothing before.
A_CORE_ONCE_TOLD = textwrap.dedent(
    """
    import os
    import sys
    import time
    from django.core.management import execute_from_command_line

    flag = sys.argv.pop(1)

    def process_time():
        return time.monotonic() if os.path.exists(flag) else 0.0

    time.process_time = process_time
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_the_worker_tries_fewer_threads_at_a_core_and_restores_them_when_the_rate_falls(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    flag = tmp_path / "a core"
    # Far more than the test runs (a minute at eight threads): 10,000 ran out on a loaded
    # machine before the growth, the two spans at a core and the trial had all been seen.
    backend.enqueue_many(tasks.work_for, [((0.01,), {}) for _ in range(50_000)])
    command = Command(
        redis_url,
        key_prefix,
        *(str(flag), "--processes", "0", "--burst", "--threads", "2", "--max-threads", "8"),
        *("--target-wait", "0.05", "-v", "2"),
        code=A_CORE_ONCE_TOLD,
    )
    try:
        command.wait_for_log(r"Worker threads from=2 to=\d+ reason=tasks waited")
        flag.touch()
        tried = command.wait_for_log(rf"Worker threads from=(\d+) to=(\d+) reason={SHRINK}")
        before, after = tried.groups()
        command.wait_for_log(rf"Worker threads from={after} to={before} reason={LOWERED}")
        command.signal()
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def test_a_trial_shrink_whose_threads_run_on_holds_nothing_else_back() -> None:
    """Retired threads end after their current task: with tasks longer than MAX_TRIAL_S the
    sizer waited on the trial, its idle threads never retired, its growth never resumed. It
    judges the trial once MAX_TRIAL_S passed, and tries no other shrink before the trial's
    threads have ended."""
    pool = SimulatedPool(cpu_bound, retire_lag_s=300.0)
    assert sizes(pool.run_for(90.0)) == [(16, 8, SHRINK)]  # one trial, none stacked on it
    pool.work, pool.free, pool.waiting = (lambda threads: (0.0, 0.0)), 16, 0
    # From the 8 the trial leaves: from all 16, its 8 turns and 13 more took the pool below MIN.
    assert sizes(pool.run_for(40.0)) == [(8, 3, "idle")]
    pool.run_for(300.0)
    assert pool.threads == 3


def test_a_pool_grown_again_before_a_trials_threads_ended_can_shrink_again() -> None:
    """The trial's threads still to end held every later trial back until the pool was no
    larger than that trial left it: a pool grown since might never be."""
    limits = PoolLimits(min_threads=3, max_threads=64, target_wait_s=0.05, idle_s=30.0)
    pool = SimulatedPool(cpu_bound, retire_lag_s=300.0, sizer=PoolSizer(limits))
    assert sizes(pool.run_for(90.0))[:1] == [(16, 8, SHRINK)]
    pool.work = waiting
    pool.run_for(30.0)
    assert pool.threads > 16  # grown for tasks that wait, the trial's threads still running
    pool.work = cpu_bound
    assert SHRINK in [why for *_, why in sizes(pool.run_for(60.0))]
