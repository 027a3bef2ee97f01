"""A unique task enqueued 1,000 times at once from many threads is stored and run once."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command

from .tasks import append_once

ENQUEUES = 1000
THREADS = 16


def test_a_thousand_concurrent_enqueues_run_once(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    with ThreadPoolExecutor(THREADS, thread_name_prefix="enqueuer") as pool:
        results = list(pool.map(lambda _: append_once.enqueue(str(log)), range(ENQUEUES)))
    assert len({result.id for result in results}) == 1
    assert backend.broker.queues() == ["default"]

    worker = start_worker("--threads", "4", "--burst")
    assert worker.wait() == 0, worker.log
    assert log.read_text() == "ran\n"
    results[0].refresh()
    assert results[0].status == TaskResultStatus.SUCCESSFUL
