"""The line a stop logs for the threads still running past the grace period names at most 20
threads and 20 tasks, and counts the others in the same fields:
``names=threadmill-worker-1,...,+5_more tasks=<id>:<path>,...,+5_more``.

It named every one: a worker of ``--threads 500`` stopped with all its threads busy logged 500
thread names and 500 ``id:path`` pairs in one ERROR line of about 45 KB (wording.listed_values).
"""

import signal
from collections.abc import Callable
from pathlib import Path

from django_threadmill.wording import MAX_LISTED_IDS
from tests.support import Command, wait_until
from tests.worker import tasks

THREADS = MAX_LISTED_IDS + 5  # each runs a task past the grace period
MORE = f"+{THREADS - MAX_LISTED_IDS}_more"
STILL_RUNNING = "Threads still running after the grace period "


def field(line: str, name: str) -> list[str]:
    """Return the items of the ``name=a,b,c`` field of ``line``."""
    [value] = [word for word in line.split() if word.startswith(f"{name}=")]
    return value.removeprefix(f"{name}=").split(",")


def test_twenty_five_threads_past_the_grace_period_are_named_twenty_and_counted(
    tmp_path: Path, start_worker: Callable[..., Command]
) -> None:
    markers = [tmp_path / f"started-{n}" for n in range(THREADS)]
    held = {tasks.work_for.enqueue(60.0, str(marker)).id for marker in markers}
    worker = start_worker("--threads", str(THREADS), "--grace-period", "0.5")
    wait_until(lambda: all(marker.exists() for marker in markers), "every task started")

    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 1, worker.log

    [line] = [line for line in worker.log.splitlines() if STILL_RUNNING in line]
    *names, more_names = field(line, "names")
    *pairs, more_tasks = field(line, "tasks")
    assert (more_names, more_tasks) == (MORE, MORE), line
    assert len(set(names)) == MAX_LISTED_IDS, line
    assert all(name.startswith("threadmill-worker-") for name in names), line
    assert {pair.split(":")[0] for pair in pairs} < held, line
    assert len(pairs) == MAX_LISTED_IDS, line
