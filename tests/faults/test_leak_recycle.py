"""A task that leaks memory: --max-tasks recycles the process, so memory stays bounded."""

from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import worker

from . import tasks
from .support import all_successful

LEAK_MB = 20  # kept by every task for good
MAX_TASKS = 4  # tasks per process before it is recycled
# Results are counted as the ack writer writes them, so a thread may start one more task
# before the process sees it reached --max-tasks: each process runs at most this many.
MOST_PER_PROCESS = MAX_TASKS + 1
TASKS = 20


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
