"""Shutdown (docs/worker.md): stop fetching, release unstarted, finish running, flush."""

import signal
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker import tasks


def test_sigterm_with_a_full_buffer_releases_unstarted_tasks_in_their_place(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    tmp_path: Path,
    start_worker: Callable[..., Command],
) -> None:
    marker = tmp_path / "started"
    running = tasks.work_for.enqueue(1.0, str(marker))
    waiting = [tasks.square.using(priority=p % 3).enqueue(n) for p, n in enumerate(range(60))]

    worker = start_worker("--threads", "1", "--prefetch", "20")
    wait_until(marker.exists, "the long task starting")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log

    running.refresh()
    assert running.status == TaskResultStatus.SUCCESSFUL
    assert "Released unstarted tasks count=" in worker.log
    statuses = {result.id: backend.get_result(result.id).status for result in waiting}
    assert set(statuses.values()) <= {TaskResultStatus.READY, TaskResultStatus.SUCCESSFUL}
    ready = broker.client.zrange(broker.queue_keys("default").ready, 0, -1)
    expected = [
        result.id
        for result in sorted(waiting, key=lambda r: -r.task.priority)  # stable: FIFO within
        if statuses[result.id] == TaskResultStatus.READY
    ]
    assert ready == expected
    assert broker.client.zcard(broker.queue_keys("default").leases) == 0


def test_second_signal_exits_at_once_and_leaves_the_lease_for_the_reaper(
    broker: Broker, tmp_path: Path, start_worker: Callable[..., Command]
) -> None:
    marker = tmp_path / "started"
    running = tasks.work_for.enqueue(60.0, str(marker))

    worker = start_worker("--grace-period", "60")
    wait_until(marker.exists, "the long task starting")
    # The start notice is written by the ack writer, just after the task begins.
    wait_until(lambda: running.refresh() or running.status == "RUNNING", "the start notice")
    worker.signal(signal.SIGTERM)
    worker.wait_for_log("Stopping worker processes")
    worker.signal(signal.SIGTERM)
    assert worker.wait(10) == 1, worker.log

    running.refresh()
    assert running.status == TaskResultStatus.RUNNING
    leases = broker.client.zrange(broker.queue_keys("default").leases, 0, -1)
    assert leases == [running.id]


def test_tasks_outliving_the_grace_period_end_the_process_with_an_error(
    tmp_path: Path, start_worker: Callable[..., Command]
) -> None:
    marker = tmp_path / "started"
    tasks.work_for.enqueue(30.0, str(marker))

    worker = start_worker("--grace-period", "0.5")
    wait_until(marker.exists, "the long task starting")
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 1, worker.log
    assert "Threads still running after the grace period names=threadmill-worker-1" in worker.log


def test_a_process_that_stopped_is_not_counted_live(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command]
) -> None:
    """Its last renewal covered a lease more: the admin, threadmill_workers and the health probe
    counted it live that long after it exited (a recycled process too)."""
    inspector = Inspector(backend.broker)
    worker = start_worker("--queue", "default", "--queue", "emails")
    wait_until(lambda: inspector.workers(["default", "emails"]), "the process's first renewal")

    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log

    assert inspector.workers(["default", "emails"]) == []
