"""Threads whose retire turns wait in the buffer count as gone for the elastic pool: its next
shrink, its read-ahead and its log lines go by the threads that stay (docs/worker.md, The
elastic pool).

A step taken back on long tasks leaves its threads running until their turns come up, behind
the tasks in the buffer. Counted as staying, a trial shrink decided meanwhile halved them too:
16 threads, 12 of them retiring and MIN 4, were sent 8 more turns, more than they were. The
pool ran down to no thread, its sizing thread died dividing by the rate of none (Thread died
name=threadmill-pool, ZeroDivisionError), and the process stopped as crashed.
"""

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from django_threadmill.worker.buffer import TaskBuffer, Turn
from django_threadmill.worker.pool import PoolSizing, WorkerPool
from django_threadmill.worker.sizer import PoolLimits, PoolSample, PoolSizer
from tests.worker.test_pool_retire_turns_and_option_bounds import BusyThread

LIMITS = PoolLimits(min_threads=4, max_threads=16, target_wait_s=0.05, idle_s=30.0)
LOOK_S = 0.025  # the pool is looked at every half --target-wait


type BusyPool = Callable[[int], WorkerPool]


@pytest.fixture
def busy_pool() -> Iterator[BusyPool]:
    """Make pools of threads that each run a long task, ended after the test; read-ahead 4 per
    thread."""
    gate = threading.Event()
    pools: list[WorkerPool] = []

    def make(threads: int) -> WorkerPool:
        buffer = TaskBuffer(4 * threads, lambda reservation: False)
        pool = WorkerPool(lambda n: BusyThread(gate), buffer, lambda live: 4 * live)  # type: ignore[arg-type,return-value]
        pool.add(threads)
        pools.append(pool)
        return pool

    yield make
    gate.set()
    for pool in pools:
        for thread in pool.threads:
            thread.join(5)


def test_a_shrink_while_a_steps_retire_turns_wait_keeps_the_pool_at_its_minimum(
    busy_pool: BusyPool,
) -> None:
    pool = busy_pool(16)
    pool.retire(12)  # a step taken back: its threads end as their turns come up
    sizer = PoolSizer(LIMITS)
    retired = []
    for n in range(round(40.0 / LOOK_S)):  # 40 s at a core, every thread busy, no rate shown
        look = dataclasses.replace(pool.sample(0.0), at=n * LOOK_S, cpu_s=n * LOOK_S)
        change, why = sizer.decide(look)
        if change < 0:
            pool.retire(-change)
            retired.append((-change, why))
    assert retired == []  # the 4 threads that stay are the minimum already


def test_read_ahead_follows_the_threads_that_stay(busy_pool: BusyPool) -> None:
    pool = busy_pool(16)
    pool.retire(12)
    assert pool.buffer.capacity == 4 * 4
    pool.add(1)  # a look that grew the pool (or a timed-out thread replaced) resized it
    assert pool.buffer.capacity == 4 * 5


def test_a_taken_retire_turn_counts_until_its_thread_is_out_of_the_pool() -> None:
    """A look between the two saw the thread live and its turn gone: one thread too many."""
    buffer = TaskBuffer(8, lambda reservation: False)
    buffer.retire_one()
    assert buffer.take() is Turn.RETIRE
    assert buffer.retiring() == 1
    buffer.retired()
    assert buffer.retiring() == 0


class Shrinks:
    """A sizer that retires two threads on its first look and stops the sizing."""

    def __init__(self, sizing: PoolSizing) -> None:
        self.sizing = sizing

    def decide(self, sample: PoolSample) -> tuple[int, str]:
        self.sizing.stop()
        return -2, "idle"


def test_the_log_line_of_a_change_counts_from_the_threads_that_stay(
    busy_pool: BusyPool, caplog: pytest.LogCaptureFixture
) -> None:
    """It said "from=16 to=14" of a pool going from 4 to 2."""
    pool = busy_pool(16)
    pool.retire(12)
    sizing = PoolSizing(pool, LIMITS, on_crash=lambda: None)
    sizing.sizer = Shrinks(sizing)  # type: ignore[assignment]
    with caplog.at_level(logging.DEBUG, logger="django_threadmill.worker.pool"):
        sizing.loop()  # in this thread: it ends once the stop is seen
    assert [r.getMessage() for r in caplog.records] == ["Worker threads from=4 to=2 reason=idle"]
