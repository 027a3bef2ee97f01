"""A task that leaks memory: --max-tasks or --max-memory recycles the process, so memory stays
bounded."""

import re
from collections import Counter, defaultdict
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import worker

from . import tasks
from .support import all_successful, executions

LEAK_MB = 20  # kept by every task for good
MAX_TASKS = 4  # tasks per process before it is recycled
# A process counts a task when its thread is done with it and, at --max-tasks, hands back what
# waits before the thread looks for its next: each process runs at most this many.
MOST_PER_PROCESS = MAX_TASKS
TASKS = 20
MEMORY_LEAK_MB = 30  # kept by every task of the --max-memory test
MAX_MEMORY_MB = 150  # an idle worker process of the test project holds about 50
MEMORY_TASKS = 12


def test_max_tasks_recycles_a_leaking_process(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    results = backend.enqueue_many(tasks.leak, [((LEAK_MB,), {}) for _ in range(TASKS)])
    command = worker(
        redis_url, key_prefix, "--threads", "1", "--max-tasks", str(MAX_TASKS), "--burst"
    )
    try:
        assert command.wait(60) == 0, command.log
        recycled = command.log.count("Worker process recycled")
    finally:
        command.close()
    assert all_successful(results)
    pids = {result.return_value[0] for result in results}
    resident_mb = [result.return_value[1] for result in results]
    assert len(pids) >= TASKS // MOST_PER_PROCESS
    assert recycled >= TASKS // MOST_PER_PROCESS - 1
    # One process holds a handful of leaks at most; without recycling it would hold all 20.
    assert max(resident_mb) - min(resident_mb) < MOST_PER_PROCESS * LEAK_MB + 30


def test_max_memory_recycles_the_process_after_the_task_that_passed_it(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.log"
    results = backend.enqueue_many(
        tasks.leak_counted, [((MEMORY_LEAK_MB, str(runs)), {}) for _ in range(MEMORY_TASKS)]
    )
    command = worker(
        redis_url, key_prefix, "--threads", "1", "--max-memory", str(MAX_MEMORY_MB), "--burst"
    )
    try:
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        command.close()
    assert all_successful(results)
    assert executions(runs) == Counter({result.id: 1 for result in results})  # none lost or twice
    resident_by_pid: dict[int, list[float]] = defaultdict(list)
    for result in results:
        pid, resident = result.return_value
        resident_by_pid[pid].append(resident)
    # A process runs no task after the one that took it past the limit: only its last is over.
    for resident in resident_by_pid.values():
        assert all(mb <= MAX_MEMORY_MB for mb in sorted(resident)[:-1]), resident_by_pid
    over = [max(resident) > MAX_MEMORY_MB for resident in resident_by_pid.values()]
    recycles = re.findall(
        rf"RSS passed --max-memory, recycling worker_id=\S+ rss_mb=([\d.]+) "
        rf"max_memory_mb={MAX_MEMORY_MB} ",
        log,
    )
    assert len(recycles) == sum(over) >= 2, log
    assert all(float(mb) > MAX_MEMORY_MB for mb in recycles)
    assert log.count("Worker process recycled") == len(recycles)
