"""A worker process hung importing a task module (a module-level call to a service that never
answers) still stops within --grace-period + 10 s, on a SIGTERM to the supervisor and when the
supervisor is SIGKILLed: the task it reserved is left to the reaper, which hands it back, and
it then runs once.

The prefetcher looked up each reservation's lane (``async def`` or not) as it buffered it,
which imported the task's module the first time, holding the buffer's put lock, which the
stop takes to close the buffer: the stop waited for the import, for good, the process's lease
keeper renewing the reservation meanwhile. Orphaned by a killed supervisor, the process lived
on holding it. The worker thread that takes the task imports it now, and the stop gives it
the grace period, as it gives a task that hangs.
"""

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from django_threadmill.worker.exit_codes import ExitCode
from django_threadmill.worker.reaper import reap_once
from tests.lifecycle.support import wait_for_expiry
from tests.support import Command, run_to_completion, wait_until

# Set in the worker's environment only: the file this module creates as its import hangs.
HANG_AT_IMPORT = "THREADMILL_TEST_HANG_AT_IMPORT"
LEASE_TTL_S = 2.0
# The stop's bound (--grace-period 1 + the stop margin 10 s), with room for a busy machine.
STOP_WITHIN_S = 40.0

if marker := os.environ.get(HANG_AT_IMPORT):
    Path(marker).touch()
    threading.Event().wait()  # a module-level call that never returns


@task
def imported_late() -> int:
    """Return the pid of the process that ran it."""
    return os.getpid()


def alive(pid: int) -> bool:
    """Tell whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def hung_worker(
    start_worker: Callable[..., Command], tmp_path: Path
) -> Iterator[tuple[Command, str]]:
    """Enqueue one task, start a worker whose prefetcher hangs importing its module; yield the
    worker once it hangs there, and the task's id. Its worker processes are killed at the end:
    a stop that hangs leaves them behind, orphaned once the supervisor is killed."""
    marker = tmp_path / "importing"
    result = imported_late.enqueue()
    worker = start_worker(
        "--threads",
        "1",
        "--grace-period",
        "1",
        "--reap-interval",
        "0",
        lease_ttl_s=LEASE_TTL_S,
        extra_env={HANG_AT_IMPORT: str(marker)},
    )
    try:
        wait_until(marker.exists, "the worker process importing the task's module")
        yield worker, result.id
    finally:
        for pid in worker.child_pids():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def handed_back_and_run_once(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    task_id: str,
) -> None:
    """The task never ran; once its lease lapses the reaper hands it back, and it runs once."""
    assert backend.get_result(task_id).status == TaskResultStatus.READY  # reserved, unstarted
    wait_for_expiry(broker, redis_client)
    assert reap_once(backend).released == 1
    assert backend.get_result(task_id).status == TaskResultStatus.READY
    run_to_completion(start_worker("--burst", "--reap-interval", "0", lease_ttl_s=LEASE_TTL_S))
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert len(result.worker_ids) == 1


def test_a_sigterm_stops_the_worker_within_its_bound_while_an_import_hangs(
    hung_worker: tuple[Command, str],
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
) -> None:
    worker, task_id = hung_worker

    worker.signal(signal.SIGTERM)

    # Left to the reaper as a task that hangs is: its lease lapses.
    assert worker.wait(STOP_WITHIN_S) == ExitCode.FORCED, worker.log
    assert (
        "Threads still running after the grace period names=threadmill-worker-1 "
        f"tasks={task_id}:{imported_late.module_path}"
    ) in worker.log
    handed_back_and_run_once(backend, broker, redis_client, start_worker, task_id)


def test_a_process_orphaned_while_an_import_hangs_still_exits(
    hung_worker: tuple[Command, str],
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
) -> None:
    worker, task_id = hung_worker
    [child] = worker.child_pids()

    worker.process.kill()
    worker.process.wait()

    wait_until(lambda: not alive(child), "the orphaned worker process exiting", STOP_WITHIN_S)
    assert "Stopping on supervisor exit" in worker.log
    handed_back_and_run_once(backend, broker, redis_client, start_worker, task_id)
