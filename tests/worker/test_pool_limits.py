"""The pool where the system refuses it threads (a thread or memory limit): it stays at the
size it reached and the process runs on."""

import textwrap
from collections import Counter

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.sizer import PoolLimits, PoolSample, PoolSizer
from tests.worker import tasks
from tests.worker.support import run_script


def test_a_pool_the_system_refuses_more_threads_stays_at_its_size_and_runs_on(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """The pool's growth met a thread limit (a container's pids limit, ulimit -u): the pool's
    thread died and the process with it, restarted to die again at the next growth."""
    results = backend.enqueue_many(tasks.work_for, [((0.1,), {}) for _ in range(12)])
    script = textwrap.dedent(
        """
        import django_threadmill.worker.threads as threads
        from django.core.management import execute_from_command_line

        start, started = threads.WorkerThread.start, []

        def refuse(self):
            started.append(self)
            if len(started) > 2:
                raise RuntimeError("can't start new thread")
            start(self)

        threads.WorkerThread.start = refuse
        execute_from_command_line(
            ["manage.py", "threadmill_worker", "--processes", "0", "--burst", "--threads", "2",
             "--max-threads", "16", "-v", "2"]
        )
        """
    )
    completed = run_script(script, redis_url, key_prefix)
    assert completed.returncode == 0, completed.stderr
    for result in results:
        result.refresh()
    assert Counter(r.status for r in results) == {TaskResultStatus.SUCCESSFUL: 12}
    assert "Thread died" not in completed.stderr
    assert (
        "Worker thread refused, the pool stays at threads=2 error=can't start new thread: the "
        "system allows no more threads"
    ) in completed.stderr


def backlogged(at: float, threads: int) -> PoolSample:
    """Every thread busy, tasks waiting, next to no CPU used."""
    return PoolSample(at=at, threads=threads, busy=threads, waiting=9, finished=0, cpu_s=0)


def test_a_pool_refused_threads_grows_no_larger_than_the_system_let_it() -> None:
    sizer = PoolSizer(PoolLimits(min_threads=2, max_threads=64, target_wait_s=0.05, idle_s=60))
    sizer.decide(backlogged(0.0, 2))
    assert sizer.decide(backlogged(0.1, 2))[0] > 0
    sizer.refused(1)  # one thread of the step started
    for n in range(2, 200):  # judged (no rate: kept, as it uses no CPU), then never grows
        assert sizer.decide(backlogged(n / 10, 3))[0] == 0
