"""The elastic pool judges CPU-bound work against the CPU its process can get: a core, or its
share of fewer (a CPU quota or affinity split between the supervisor's processes), not always
a whole core (docs/worker.md, The elastic pool).

Under a 1.5-CPU quota the default ``--processes`` starts 2, each getting 0.75 of a core at
most; two processes pinned to one CPU get half each. Measured against a whole core, their
CPU-bound tasks never looked CPU-bound: a pool grown for tasks that waited stayed grown (15 of
16 threads for 40 s of pure Python under ``taskset -c 0 ... --processes 2``), and it kept trying
to grow for them, each step taken back.

The sizer a real ``Crew`` builds is driven with a made-up clock and CPU: the process uses all
the CPU it can get, a quarter of a core (four processes per usable CPU).
"""

from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.cpus import process_cpu_share, usable_cpus
from django_threadmill.worker.crew import Crew
from django_threadmill.worker.executor import Executor
from django_threadmill.worker.sizer import CPU_BOUND, PoolSizer
from tests.management.test_worker_defaults_and_option_combinations import cgroup_v2
from tests.worker.support import role_crashed, worker_options
from tests.worker.test_a_pool_shrinks_when_work_turns_cpu_bound import (
    SHRINK,
    SimulatedPool,
    sizes,
    waiting,
)

PROCESSES_PER_CPU = 4  # each process gets a quarter of a core


def quarter_core_sizer(backend: ThreadmillTaskBackend) -> PoolSizer:
    """The sizer of a process started as one of four per usable CPU, ``--threads 3
    --max-threads 16``: what its worker process builds (the threads are never started)."""
    options = worker_options(processes=PROCESSES_PER_CPU * usable_cpus(), threads=3, max_threads=16)
    crew = Crew(
        options,
        backend.broker,
        Executor("worker-a", backend.alias, type(backend)),
        "worker-a",
        drain_outbox=lambda queue: 0,
        lease_interval_s=20.0,
        on_task_done=lambda: None,
        on_empty=lambda: None,
        on_refused=lambda error: None,
        on_crash=role_crashed,
        release=lambda reservations: None,
    )
    assert crew.sizing is not None
    return crew.sizing.sizer


def cpu_bound_on_a_quarter_core(threads: int) -> tuple[float, float]:
    """Pure Python in a process that gets a quarter of a core: all of it, and the same rate
    however many threads run it."""
    return 125.0, 1 / PROCESSES_PER_CPU


def test_a_pool_grown_for_waiting_tasks_shrinks_once_they_use_all_the_cpu_it_gets(
    backend: ThreadmillTaskBackend,
) -> None:
    pool = SimulatedPool(waiting, threads=3, sizer=quarter_core_sizer(backend))
    pool.run_for(5.0)
    assert pool.threads == 16  # grown for tasks that wait
    pool.work = cpu_bound_on_a_quarter_core
    assert sizes(pool.run_for(25.0)) == [(16, 8, SHRINK), (8, 4, SHRINK), (4, 3, SHRINK)]


def test_cpu_bound_tasks_using_all_the_cpu_it_gets_do_not_grow_the_pool(
    backend: ThreadmillTaskBackend,
) -> None:
    pool = SimulatedPool(cpu_bound_on_a_quarter_core, threads=3, sizer=quarter_core_sizer(backend))
    assert pool.run_for(60.0) == []


@pytest.mark.parametrize(
    ("cpu_max", "processes", "share"),
    [
        ("150000 100000\n", 2, 0.75),  # 1.5 CPUs: the default --processes is 2
        ("50000 100000\n", 1, 0.5),  # a Kubernetes limit of 500m
        ("50000 100000\n", 0, 0.5),  # --processes 0: the command's own process
        ("max 100000\n", 1, 1.0),  # no quota: a core, whatever the host has (the GIL)
    ],
)
def test_a_process_gets_its_share_of_the_quota_and_at_most_a_core(
    tmp_path: Path, cpu_max: str, processes: int, share: float
) -> None:
    own_cgroups = cgroup_v2(tmp_path / "cgroup", cpu_max)
    assert process_cpu_share(processes, tmp_path / "cgroup", own_cgroups) == share


def test_processes_past_the_usable_cpus_share_them(tmp_path: Path) -> None:
    own_cgroups = cgroup_v2(tmp_path / "cgroup", None)
    processes = PROCESSES_PER_CPU * usable_cpus()
    share = process_cpu_share(processes, tmp_path / "cgroup", own_cgroups)
    assert share == 1 / PROCESSES_PER_CPU
    assert share < CPU_BOUND  # what a whole core's mark never saw
