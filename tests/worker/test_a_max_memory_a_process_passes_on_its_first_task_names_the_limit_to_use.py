"""A --max-memory above what the command holds at start, which its check accepts, but below what
a worker process holds once it imported the tasks' modules (a heavy library), recycles every
process after every task, forever. The process that passes it on its first task says so in one
ERROR, with the limit to use instead.

Before, each process logged only its own "RSS passed --max-memory, recycling" WARNING, the same
line a leaking process logs, and nothing said that no process could ever run a second task.
"""

import os
import re
from collections.abc import Callable

from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from tests.support import Command

# Set in the worker's environment only: the module then holds this many MiB from its import,
# as a task module importing a heavy library does. The command's own check at start never
# imports it: the supervisor holds about 60 MiB, a worker process that imported it about 190.
HEAVY_IMPORT_MB = "THREADMILL_TEST_HEAVY_IMPORT_MB"
MAX_MEMORY_MB = 150
TASKS = 3

_held_from_import = os.urandom(int(os.environ.get(HEAVY_IMPORT_MB, "0")) * 2**20)


@task
def pid() -> int:
    return os.getpid()


def test_a_limit_a_fresh_process_passes_is_named_with_the_limit_to_use(
    start_worker: Callable[..., Command],
) -> None:
    results = [pid.enqueue() for _ in range(TASKS)]
    worker = start_worker(
        "--threads",
        "1",
        "--max-memory",
        str(MAX_MEMORY_MB),
        "--burst",
        extra_env={HEAVY_IMPORT_MB: "128"},
    )
    assert worker.wait() == 0, worker.log
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
    assert len({result.return_value for result in results}) == TASKS  # one task per process
    said = re.findall(
        r"ERROR .* --max-memory passed on the first task, so every worker process may recycle "
        r"after every task worker_id=\S+ rss_mb=([\d.]+) max_memory_mb=150: .* "
        r"e\.g\. --max-memory (\d+) ",
        worker.log,
    )
    assert len(said) == TASKS, worker.log
    for rss_mb, suggested in said:
        assert int(suggested) > float(rss_mb) > MAX_MEMORY_MB
