"""The elastic pool: grows while tasks wait and every thread is busy, shrinks when idle, and
takes back a step that did not raise the finish rate (work bound by the GIL).

The sizer's decisions are tested on samples with a made-up clock; the real command shows the
pool growing under waiting work and shrinking once idle.
"""

import threading
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import WorkerPool
from django_threadmill.worker.sizer import PoolLimits, PoolSample, PoolSizer
from tests.support import Command, wait_until
from tests.worker import tasks

LIMITS = PoolLimits(min_threads=2, max_threads=16, target_wait_s=0.05, idle_s=30.0)


def sample(at: float, *, threads: int, busy: int, waiting: int, finished: int,
           cpu_s: float = 0) -> PoolSample:  # fmt: skip
    return PoolSample(
        at=at,
        threads=threads,
        busy=busy,
        waiting=waiting,
        finished=finished,
        cpu_s=cpu_s,
    )


def test_it_grows_once_tasks_waited_longer_than_the_target_with_every_thread_busy() -> None:
    sizer = PoolSizer(LIMITS)
    assert sizer.decide(sample(0.0, threads=2, busy=2, waiting=5, finished=0)) == (0, "")
    assert sizer.decide(sample(0.03, threads=2, busy=2, waiting=5, finished=6)) == (0, "")
    change, why = sizer.decide(sample(0.06, threads=2, busy=2, waiting=5, finished=12))
    # Tasks that wait use next to no CPU: the step is the largest there is, the pool quadruples.
    assert (change, why) == (6, "tasks waited and every thread was busy")


def test_a_step_adds_what_the_spare_cpu_would_carry() -> None:
    """threads x (0.85 / cores - 1), at least half as many again, at most three times as many."""
    for cores, step in ((0.5, 2), (0.4, 4), (0.2, 12), (0.8, 2)):
        sizer = PoolSizer(LIMITS)
        sizer.decide(sample(0.0, threads=4, busy=4, waiting=9, finished=0))
        change, _ = sizer.decide(
            sample(0.1, threads=4, busy=4, waiting=9, finished=80, cpu_s=0.1 * cores)
        )
        assert change == step, cores


def test_it_does_not_grow_while_a_thread_is_free_or_nothing_waits() -> None:
    sizer = PoolSizer(LIMITS)
    for at in (0.0, 0.1, 0.2):
        assert sizer.decide(sample(at, threads=2, busy=1, waiting=5, finished=0))[0] == 0
    for at in (0.3, 0.4, 0.5):
        assert sizer.decide(sample(at, threads=2, busy=2, waiting=0, finished=0))[0] == 0


def test_it_does_not_grow_a_process_that_already_uses_a_core() -> None:
    sizer = PoolSizer(LIMITS)
    for n, at in enumerate((0.0, 0.1, 0.2, 0.3)):
        change, _ = sizer.decide(
            sample(at, threads=2, busy=2, waiting=5, finished=100 * n, cpu_s=0.095 * n)
        )
        assert change == 0


def backlogged(at: float, threads: int, finished: int, cpu_s: float = 0) -> PoolSample:
    """Every thread busy and tasks waiting."""
    return sample(at, threads=threads, busy=threads, waiting=9, finished=finished, cpu_s=cpu_s)


def test_a_step_is_judged_once_settled_and_kept_when_the_rate_rose_in_proportion() -> None:
    sizer = PoolSizer(LIMITS)
    sizer.decide(backlogged(0.0, 4, 0))
    # 800/s on four threads (5 ms a task), half a core: two more threads.
    assert sizer.decide(backlogged(0.1, 4, 80, cpu_s=0.05))[0] == 2
    assert sizer.decide(backlogged(0.11, 6, 88)) == (0, "")  # settled: measured from here
    # 1,200/s on six threads: the step raised the rate by its share, so it stays.
    assert sizer.decide(backlogged(0.4, 6, 88 + 348, cpu_s=0.15)) == (0, "")
    sizer.decide(backlogged(0.41, 6, 448, cpu_s=0.2))
    # Still half a core, now at six threads: four more.
    assert sizer.decide(backlogged(0.47, 6, 520, cpu_s=0.23))[0] == 4


def test_a_step_that_does_not_raise_the_rate_is_taken_back_and_growth_pauses() -> None:
    sizer = PoolSizer(LIMITS)
    sizer.decide(backlogged(0.0, 4, 0))
    assert sizer.decide(backlogged(0.1, 4, 1000, cpu_s=0.05))[0] == 2
    sizer.decide(backlogged(0.11, 6, 1100))
    change, why = sizer.decide(backlogged(0.4, 6, 1100 + 2900))  # 10,000/s, as before
    assert (change, why) == (-2, "the threads added did not raise the finish rate")
    for at in (0.45, 0.5, 2.0, 5.0):  # paused, however long tasks wait
        assert sizer.decide(backlogged(at, 4, 4000))[0] == 0


def test_a_step_that_raised_the_rate_by_less_than_its_share_keeps_the_threads_that_paid() -> None:
    """Tasks that wait on something with room for a few at once (a connection pool): from four
    threads to sixteen the rate rises by three eighths, what one and a half threads more would
    give, so two of the twelve stay."""
    sizer = PoolSizer(LIMITS)
    sizer.decide(backlogged(0.0, 4, 0))
    assert sizer.decide(backlogged(0.1, 4, 80, cpu_s=0.001))[0] == 12  # 800/s, next to no CPU
    sizer.decide(backlogged(0.11, 16, 88))
    change, why = sizer.decide(backlogged(0.4, 16, 88 + 319))  # 1,100/s
    assert (change, why) == (
        -10,
        "the threads added raised the finish rate by less than their share",
    )
    for at in (0.45, 2.0, 5.0):  # and growth pauses
        assert sizer.decide(backlogged(at, 6, 500))[0] == 0


def test_a_step_on_long_tasks_waits_for_their_results_before_it_is_judged() -> None:
    """One-second tasks: the new threads' first results come a second after the step, so the
    rate is read from then on, over at least two results per thread."""
    sizer = PoolSizer(LIMITS)
    sizer.decide(backlogged(0.0, 2, 0))
    assert sizer.decide(backlogged(2.0, 2, 4))[0] == 6  # 2/s on two threads: tasks of 1 s
    for at, finished in ((2.3, 4), (2.9, 5), (3.0, 6), (3.5, 7), (4.5, 15)):
        assert sizer.decide(backlogged(at, 8, finished)) == (0, ""), at
    # From 3.0 s, sixteen results in two seconds: 8/s, four times the rate before. Kept.
    assert sizer.decide(backlogged(5.0, 8, 22)) == (0, "")


def test_a_step_whose_tasks_show_no_rate_is_judged_by_the_cpu() -> None:
    """Tasks that block for longer than a trial finish nothing to count: the step stays
    while the process does not use a core, and goes while it does."""
    for cpu_after, change in ((0.01, 0), (0.35, -6)):
        sizer = PoolSizer(LIMITS)
        sizer.decide(backlogged(0.0, 2, 0))
        assert sizer.decide(backlogged(0.06, 2, 0))[0] == 6
        sizer.decide(backlogged(0.07, 8, 0))
        assert sizer.decide(backlogged(0.4, 8, 0, cpu_s=cpu_after))[0] == change


def test_threads_spare_for_a_whole_idle_spell_are_retired_down_to_the_minimum_only() -> None:
    sizer = PoolSizer(LIMITS)
    assert sizer.decide(sample(0.0, threads=3, busy=0, waiting=0, finished=0)) == (0, "")
    assert sizer.decide(sample(31.0, threads=3, busy=0, waiting=0, finished=0)) == (-1, "idle")
    assert sizer.decide(sample(31.1, threads=2, busy=0, waiting=0, finished=0))[0] == 0
    assert sizer.decide(sample(99.0, threads=2, busy=0, waiting=0, finished=0))[0] == 0


def test_a_light_steady_load_spread_over_every_thread_still_shrinks_the_pool() -> None:
    """The buffer hands tasks to its threads in turn: a task every 0.1 s kept each of 16
    threads from ever being idle for --thread-idle, so the pool never shrank."""
    sizer = PoolSizer(LIMITS)
    looks = [sample(n * 0.025, threads=16, busy=n % 4 == 0, waiting=0, finished=n // 4)
             for n in range(int(30.0 / 0.025) + 1)]  # fmt: skip
    decisions = [sizer.decide(look) for look in looks]
    assert decisions[-1] == (-14, "idle")  # one thread was ever busy: down to the minimum
    assert all(change == 0 for change, _ in decisions[:-1])


def test_a_pool_whose_threads_were_all_busy_at_once_keeps_them() -> None:
    sizer = PoolSizer(LIMITS)
    looks = [sample(n * 0.025, threads=4, busy=4 if n == 600 else 1, waiting=0, finished=n)
             for n in range(int(30.0 / 0.025) + 1)]  # fmt: skip
    assert all(sizer.decide(look)[0] == 0 for look in looks)


class StubThread(threading.Thread):
    """A worker thread that runs ``work`` and ends."""

    def __init__(self, work: Callable[[], object]) -> None:
        super().__init__(target=work)
        self.abandoned = self.retired = False
        self.busy = False
        self.finished = 0


def test_the_pool_forgets_threads_that_ended() -> None:
    """Retired threads stayed in the pool's list for good: a bursty worker grew by about 31 a
    burst, each walked four times a second."""
    gate = threading.Event()
    ending = True
    pool = WorkerPool(
        lambda n: StubThread(lambda: None if ending else gate.wait(60)),  # type: ignore[arg-type,return-value]
        TaskBuffer(4, lambda reservation: False),
        lambda live: live,
    )
    pool.add(3)
    for thread in pool.threads:
        thread.retired = True  # as the pool's shrinking ends them
        thread.join(5)
    ending = False
    pool.add(1)
    try:
        assert len(pool.threads) == 1
        assert pool.threads[0].is_alive()
    finally:
        gate.set()
        pool.threads[0].join(5)


def test_the_pool_counts_what_its_own_threads_finished_those_that_ended_too() -> None:
    """The growth steps are judged on this count: the process's count took in the event loop's
    tasks, whose rate drowned a sync step's (steps were taken back as if they did not help)."""
    pool = WorkerPool(
        lambda n: StubThread(lambda: None),  # type: ignore[arg-type,return-value]
        TaskBuffer(4, lambda reservation: False),
        lambda live: live,
    )
    pool.add(2)
    for thread in pool.threads:
        thread.finished = 3
        thread.join(5)
    assert pool.finished() == 6
    pool.add(1)  # forgets the two that ended
    assert len(pool.threads) == 1
    pool.threads[0].finished = 1
    assert pool.finished() == 7


def test_the_worker_grows_its_pool_under_waiting_work_and_shrinks_it_when_idle(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    blocked = [tasks.wait_for_file.enqueue(str(gate)) for _ in range(4)]
    command = start_worker(
        "--threads",
        "1",
        "--max-threads",
        "4",
        "--target-wait",
        "0.05",
        "--thread-idle",
        "0.3",
        "-v",
        "2",
    )
    command.wait_for_log(r"Worker threads from=\d+ to=4 reason=tasks waited")
    gate.touch()
    wait_until(
        lambda: all(
            backend.get_result(r.id).status == TaskResultStatus.SUCCESSFUL for r in blocked
        ),
        "the blocked tasks finishing",
    )
    command.wait_for_log(r"Worker threads from=4 to=1 reason=idle")
