"""What logs and pages say at the edges: the worker's shutdown and timeout lines, the admin's
cancel wording, and a damaged listing of ids written by hand with control characters."""

import re
import signal
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import Task, TaskResultStatus
from testproject.example.tasks import add
from tests.admin.conftest import TASKS_URL, logged_in, staff_user
from tests.support import Command, output_of, wait_until, worker
from tests.worker import async_tasks, tasks
from tests.worker.test_refused_replacement_thread import ONE_WORKER_THREAD_PER_PROCESS

# The worker command, whose watchdog times tasks out only once a stop began: a task that hangs
# is timed out in the grace period, whatever the machine's speed.
TIMED_OUT_WHILE_STOPPING = textwrap.dedent(
    """
    import sys
    import django_threadmill.worker.pool as pool
    from django.core.management import execute_from_command_line

    abandon = pool.WorkerPool.abandon_if_overdue

    def once_stopping(self, thread, timeout_s, *, replace):
        return None if replace else abandon(self, thread, timeout_s, replace=replace)

    pool.WorkerPool.abandon_if_overdue = once_stopping
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def timed_out_line(log: str, task_id: str) -> str:
    [line] = [line for line in log.splitlines() if f"Task timed out task_id={task_id}" in line]
    return line


def test_a_task_timed_out_in_the_grace_period_is_not_said_replaced(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The stop starts no thread: the line said "(abandoned, replaced)" all the same."""
    gate = tmp_path / "gate"
    hung = tasks.wait_for_file.enqueue(str(gate))
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "1", "--threads", "1", "--task-timeout", "0.2"),
        *("--grace-period", "600"),
        code=TIMED_OUT_WHILE_STOPPING,
    )
    try:
        wait_until(
            lambda: backend.get_result(hung.id).status == TaskResultStatus.RUNNING,
            "the task running",
        )
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        gate.touch()
        command.close()
    assert timed_out_line(log, hung.id).endswith(
        "(abandoned, not replaced: the worker is stopping)"
    ), log


def test_a_task_timed_out_whose_replacement_was_refused_is_not_said_replaced(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The system refused the fresh thread: the line said "(abandoned, replaced)" all the same."""
    gate = tmp_path / "gate"
    hung = tasks.wait_for_file.enqueue(str(gate))
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "1", "--threads", "1", "--task-timeout", "0.5"),
        code=ONE_WORKER_THREAD_PER_PROCESS,
    )
    try:
        command.wait_for_log(r"Worker process recycled slot=0")
        command.signal()
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        gate.touch()
        command.close()
    assert timed_out_line(log, hung.id).endswith(
        "(abandoned, not replaced: the system refused a new thread)"
    ), log


@pytest.mark.parametrize(
    "task", [tasks.work_for, async_tasks.blocks_the_loop, async_tasks.ignores_its_cancel]
)
def test_threads_left_running_at_the_deadline_name_their_tasks(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, task: Task
) -> None:
    """The line named threads only (threadmill-worker-1, threadmill-event-loop): not which
    task to look at; then, for a coroutine that ignored its cancel, "tasks=none" (the loop
    ran no task's code just then)."""
    result = task.enqueue(30.0)
    command = worker(redis_url, key_prefix, "--grace-period", "0.5")
    try:
        wait_until(
            lambda: backend.get_result(result.id).status == TaskResultStatus.RUNNING,
            "the task running",
        )
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 1, command.log
        log = command.log
    finally:
        command.close()
    left = re.search(r"Threads still running after the grace period names=\S+ tasks=(\S+)", log)
    assert left is not None, log
    assert left[1] == f"{result.id}:{result.task.module_path}", log


@pytest.fixture
def canceller(db: None) -> Client:
    return logged_in(staff_user("canceller", "view_task", "change_task"))


def test_the_cancel_confirmation_says_delayed_tasks_are_cancelled_too(
    canceller: Client, backend: ThreadmillTaskBackend
) -> None:
    """It said only READY tasks are changed: the delayed one it listed is cancelled too."""
    delayed = add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1).id
    action_url = TASKS_URL + "action/"

    one = canceller.post(
        action_url,
        {"action": "cancel", "_selected_action": [f"default:{delayed}"], "next": TASKS_URL},
    ).content.decode()
    every = canceller.post(
        action_url, {"action": "cancel", "across": "1", "next": TASKS_URL}
    ).content.decode()

    assert "only tasks that are READY or delayed when you confirm are changed" in one
    assert "Cancel every READY or delayed task a filter matches" in every
    assert "is READY or delayed now and matches" in every
    assert "only tasks that are READY or delayed at that moment are" in every
    assert backend.get_result(delayed).status == TaskResultStatus.READY


FORGED = "plain\nqueue=default id=forged at=2023-11-14T22:13:20+00:00 script=acquire reason=ok"


def test_the_damaged_listing_escapes_control_characters_written_by_hand(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """A newline in an id forged a listing line, an escape sequence drove the terminal; each
    is listed as forget-damaged takes it."""
    ids = ["normal-id", FORGED, "\x1b[2Jcleared", "next\x85line"]
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping=dict.fromkeys(ids, "1700000000000 acquire: bad\r\nreason"))

    lines = output_of("threadmill_queue", "damaged", "default").splitlines()

    listed = ["normal-id", FORGED.replace("\n", "\\x0a"), "\\x1b[2Jcleared", "next\\xc2\\x85line"]
    assert sorted(lines) == sorted(
        f"queue=default id={task_id} at=2023-11-14T22:13:20+00:00 script=acquire "
        "reason=bad\\x0d\\x0areason"
        for task_id in listed
    )
    assert output_of("threadmill_queue", "forget-damaged", "default", *listed) == (
        "Forgot 4 damaged record(s) of queue default.\n"
    )
    assert redis_client.hlen(key) == 0
