"""An ``async def`` task whose module raised once as the worker imported it (a module-level
query before the database was up) runs, and runs on the event loop once its module imports.

The worker kept the lane it found at the failed import, the threads', for the life of the
process: the module imported at the next look, and every one of its tasks then failed with
"returned a coroutine it never awaited" though it was an ``async def`` task. The event loop
sorts these tasks (their payloads say ``async def``): its import failed, a worker thread imports
the module again, and every task runs on the event loop.
"""

from collections.abc import Callable

from django_threadmill.compat import TaskResultStatus
from tests.support import Command
from tests.worker.import_fails_once_tasks import FAIL_FIRST_IMPORT, awaited


def test_an_async_task_whose_module_failed_to_import_once_runs_on_the_event_loop_after(
    start_worker: Callable[..., Command],
) -> None:
    results = [awaited.enqueue(n) for n in range(3)]

    worker = start_worker("--threads", "1", "--burst", extra_env={FAIL_FIRST_IMPORT: "1"})
    assert worker.wait(60) == 0, worker.log

    threads = []
    for n, result in enumerate(results):
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
        assert result.return_value[0] == n + 1
        threads.append(result.return_value[1])
    assert threads == ["threadmill-event-loop"] * 3
