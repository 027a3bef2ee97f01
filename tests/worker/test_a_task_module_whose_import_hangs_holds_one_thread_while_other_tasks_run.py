"""A task module whose import hangs (a module-level call to a service that does not answer)
holds one worker thread, as a task that hangs does: the tasks enqueued after its tasks, sync
and async, all run meanwhile, and once the import returns its tasks run too, the async one on
the event loop.

The prefetcher looked up each reserved task's lane (``async def`` or not) as it buffered it,
which imported the task's module the first time: hung there, it held the batch it reserved
and reserved nothing more, so no task of any queue ran in the process, while its leases were
renewed and ``threadmill_health`` stayed green.
"""

import os
from collections.abc import Callable
from pathlib import Path

from django_threadmill.compat import TaskResult, TaskResultStatus, task
from tests.support import Command, wait_until
from tests.worker import async_tasks, tasks

# Set in the worker's environment only: "<marker>:<gate>". The module creates the marker, then
# its import waits until the test opens the gate, a named pipe, for writing and closes it.
HANG_AT_IMPORT = "THREADMILL_TEST_IMPORT_WAITS_FOR"
WITHIN_S = 30.0  # how long the tasks after the hung ones may take, with room for a busy machine

if hang := os.environ.get(HANG_AT_IMPORT):
    marker, gate = hang.split(":")
    Path(marker).touch()
    with open(gate) as opened:  # blocks until a writer opens the pipe, reads until it closes
        opened.read()


@task
def imported_late() -> int:
    """Return the pid of the process that ran it."""
    return os.getpid()


@task
async def aimported_late() -> int:
    """Return the pid of the process that ran it, from its event loop."""
    return os.getpid()


def all_successful(results: list[TaskResult]) -> bool:
    """Tell whether every one of ``results`` ended SUCCESSFUL (read afresh)."""
    for result in results:
        result.refresh()
    return all(result.status == TaskResultStatus.SUCCESSFUL for result in results)


def test_tasks_after_a_hung_import_run_and_its_own_run_once_it_returns(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    marker, gate = tmp_path / "importing", tmp_path / "gate"
    os.mkfifo(gate)
    hung = [imported_late.enqueue(), aimported_late.enqueue()]
    after = [tasks.square.enqueue(n) for n in range(8)]
    after += [async_tasks.nap.enqueue(0, str(tmp_path / "naps")) for _ in range(8)]
    worker = start_worker("--threads", "2", extra_env={HANG_AT_IMPORT: f"{marker}:{gate}"})
    wait_until(marker.exists, "the worker process importing the hung tasks' module")

    wait_until(lambda: all_successful(after), "the tasks after the hung ones running", WITHIN_S)
    assert [result.return_value for result in after[:8]] == [n * n for n in range(8)]
    for result in hung:
        result.refresh()
        assert result.status == TaskResultStatus.READY, worker.log  # reserved, unstarted

    os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))  # the import returns (ENXIO: it died)
    wait_until(lambda: all_successful(hung), "the hung tasks running once their import returned")
    [pid] = {result.return_value for result in hung + after[8:]}
    assert pid in worker.child_pids()
    assert all(len(result.worker_ids) == 1 for result in hung)

    worker.signal()
    assert worker.wait() == 0, worker.log
