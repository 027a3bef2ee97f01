"""Tasks for the fault tests, at module level so worker processes import them."""

import os
import threading
import time
from pathlib import Path

from django_threadmill.compat import TaskContext, task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task

_leaked: list[bytes] = []  # grows with every leak() call: only recycling the process frees it
# An attempt whose lease lapsed (its outcome never written) runs again at once.
AT_ONCE_AGAIN = ExponentialBackoff(base_delay=0, max_delay=0, jitter=0, max_attempts=3)


@task(takes_context=True)
def count_run(context: TaskContext, log: str) -> int:
    """Append this task's id to ``log`` (one write), so tests count executions outside Redis."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{context.task_result.id}\n".encode())
    finally:
        os.close(fd)
    return os.getpid()


@task
def hang_forever(marker: str) -> None:
    """Say the attempt started, then block for good: only a task timeout gets past it."""
    Path(marker).write_text("started")
    threading.Event().wait()


@threadmill_task(retry=AT_ONCE_AGAIN)
def wait_for_file(path: str) -> str:
    """Hold a worker thread until ``path`` exists; retried if its lease lapses."""
    while not Path(path).exists():
        time.sleep(0.01)  # the task's own wait, polled; the test creates the file
    return "done"


def resident_mb() -> float:
    """Return this process's resident set size in MB, from /proc."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@task
def leak(megabytes: int) -> list[float]:
    """Keep ``megabytes`` of memory for good; return [pid, resident MB] after the leak."""
    _leaked.append(os.urandom(megabytes * 2**20))
    return [os.getpid(), resident_mb()]


@task(takes_context=True)
def leak_counted(context: TaskContext, megabytes: int, log: str) -> list[float]:
    """``leak``, each run counted in ``log`` as ``count_run`` counts it."""
    count_run.func(context, log)
    return leak.func(megabytes)
