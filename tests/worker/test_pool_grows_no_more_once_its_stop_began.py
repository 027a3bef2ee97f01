"""The elastic pool adds no thread once its stop began, even for a step its sizing decided on a
look just before (docs/worker.md, The elastic pool).

Before, the step was added all the same: "Stopping on supervisor request", then "Worker threads
from=64 to=200" in the stopping process's log.
"""

import threading

from django_threadmill.worker.buffer import TaskBuffer
from django_threadmill.worker.pool import PoolSizing, WorkerPool
from django_threadmill.worker.sizer import PoolLimits, PoolSample

LIMITS = PoolLimits(min_threads=2, max_threads=16, target_wait_s=0.02, idle_s=30.0)


class IdleThread(threading.Thread):
    """A worker thread that is never started: the pool only counts it."""

    def __init__(self) -> None:
        super().__init__()
        self.abandoned = self.retired = False
        self.busy = True
        self.finished = 0


class StoppedMidLook:
    """A sizer whose look decides to grow while the process's stop reaches the sizing."""

    def __init__(self, sizing: PoolSizing) -> None:
        self.sizing = sizing
        self.refusals: list[int] = []

    def decide(self, sample: PoolSample) -> tuple[int, str]:
        self.sizing.stop()  # between the look and the add: what the decision cannot see
        return 6, "tasks waited and every thread was busy"

    def refused(self, added: int) -> None:
        self.refusals.append(added)


def test_a_step_decided_before_the_stop_adds_no_thread_after_it() -> None:
    pool = WorkerPool(
        lambda n: IdleThread(),  # type: ignore[arg-type,return-value]
        TaskBuffer(8, lambda reservation: False),
        lambda live: live,
    )
    pool.add(2, start=False)
    sizing = PoolSizing(pool, LIMITS, on_crash=lambda: None)
    sizer = StoppedMidLook(sizing)
    sizing.sizer = sizer  # type: ignore[assignment]

    sizing.loop()  # in this thread: it ends once the stop is seen

    assert len(pool.threads) == 2
    assert sizer.refusals == []  # no refusal by the system either
