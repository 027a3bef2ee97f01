"""The lifecycle with the real worker command: SIGKILL, reap, retry to attempt 3, deferral."""

import os
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.worker.reaper import reap_once
from tests.support import ROOT, Command, wait_until, worker

from .support import wait_for_expiry
from .tasks import flaky, hang, plain

WORKER_COMMAND = ROOT / "django_threadmill/management/commands/threadmill_worker.py"
pytestmark = pytest.mark.skipif(
    not WORKER_COMMAND.exists(), reason="manage.py threadmill_worker is not written yet"
)
LEASE_TTL_S = 2.0  # long enough that a busy CI machine renews in time, short enough to wait for


@pytest.fixture
def workers() -> Iterator[list[Command]]:
    """Start workers with ``workers.append(start_worker(...))``; each is closed at the end."""
    started: list[Command] = []
    yield started
    for command in started:
        command.close()


def start_worker(redis_url: str, key_prefix: str, *args: str) -> Command:
    # --reap-interval 0: the supervisor does not reap, so the test decides when a pass runs.
    return worker(
        redis_url,
        key_prefix,
        "--threads",
        "1",
        "--reap-interval",
        "0",
        *args,
        lease_ttl_s=LEASE_TTL_S,
    )


def finish_burst(command: Command) -> None:
    assert command.wait() == 0, command.log


def state_of(broker: Broker, redis_client: redis.Redis, task_id: str) -> str | None:
    key = broker.record_key(task_id)
    assert key is not None
    return redis_client.hget(key, "state")


def test_sigkilled_worker_running_task_fails_and_its_reserved_tasks_run_elsewhere(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    workers: list[Command],
) -> None:
    marker = tmp_path / "started"
    hanging = hang.enqueue(str(marker)).id
    waiting = [plain.using(queue_name="reports").enqueue().id for _ in range(3)]
    first = start_worker(redis_url, key_prefix, "--queue", "reports", "--prefetch", "4")
    workers.append(first)
    wait_until(marker.exists, "the hanging task starting")
    wait_until(
        lambda: backend.get_result(hanging).status == TaskResultStatus.RUNNING,
        "the start notice of the hanging task reaching Redis",
    )
    wait_until(
        lambda: all(state_of(broker, redis_client, i) == "reserved" for i in waiting),
        "the other three tasks being reserved by the worker",
    )
    # SIGKILL the supervisor first, so it cannot restart its child, then the worker process.
    children = first.child_pids()
    first.process.kill()
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    first.wait()

    wait_for_expiry(broker, redis_client, "reports")
    report = reap_once(backend)

    assert (report.failed, report.released) == (1, 3)
    lost = backend.get_result(hanging)
    assert lost.status == TaskResultStatus.FAILED
    [error] = lost.errors
    assert error.exception_class is LeaseExpired
    assert f"Worker {lost.worker_ids[-1]} stopped renewing its lease; deadline" in error.traceback
    assert all(backend.get_result(i).status == TaskResultStatus.READY for i in waiting)

    second = start_worker(redis_url, key_prefix, "--queue", "reports", "--burst")
    workers.append(second)
    finish_burst(second)
    for task_id in waiting:
        result = backend.get_result(task_id)
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert len(result.worker_ids) == 1
        assert result.worker_ids != lost.worker_ids
    assert backend.get_result(hanging).status == TaskResultStatus.FAILED


def test_worker_retries_a_task_until_it_succeeds_on_attempt_three(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    workers: list[Command],
) -> None:
    task_id = flaky.enqueue(2).id
    command = start_worker(redis_url, key_prefix, "--queue", "default", "--burst")
    workers.append(command)
    finish_burst(command)

    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL, command.log
    assert result.return_value == 3
    assert result.attempts == 3
    assert [e.exception_class for e in result.errors] == [ValueError, ValueError]


def test_worker_runs_a_deferred_task_when_due_and_not_before(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    workers: list[Command],
) -> None:
    run_after = timezone.now() + timedelta(seconds=1)
    task_id = plain.using(run_after=run_after).enqueue().id
    command = start_worker(redis_url, key_prefix, "--queue", "default", "--burst")
    workers.append(command)
    finish_burst(command)

    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.started_at is not None
    assert result.started_at >= run_after.replace(microsecond=run_after.microsecond // 1000 * 1000)


def test_supervisor_reaps_the_attempt_of_its_sigkilled_worker_process(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
    workers: list[Command],
) -> None:
    """Without threadmill_reap running, the supervisor's own reap pass settles the lease."""
    marker = tmp_path / "started"
    task_id = hang.enqueue(str(marker)).id
    command = worker(
        redis_url, key_prefix, "--queue", "reports", "--reap-interval", "0.2", lease_ttl_s=1.0
    )
    workers.append(command)
    wait_until(marker.exists, "the hanging task starting")
    wait_until(
        lambda: backend.get_result(task_id).status == TaskResultStatus.RUNNING,
        "the start notice of the hanging task reaching Redis",
    )
    [child] = command.child_pids()
    os.kill(child, signal.SIGKILL)  # the supervisor lives on and spawns a new process

    wait_until(
        lambda: backend.get_result(task_id).status == TaskResultStatus.FAILED,
        "the supervisor's reap pass failing the lost attempt",
        timeout_s=30,
    )
    [error] = backend.get_result(task_id).errors
    assert error.exception_class is LeaseExpired
    command.signal(signal.SIGTERM)
    assert command.wait() == 0, command.log
