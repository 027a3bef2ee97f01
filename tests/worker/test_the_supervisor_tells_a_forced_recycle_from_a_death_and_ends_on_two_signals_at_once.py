"""The supervisor's account of how its processes end: a recycle that left a task running is
no death, and two stop signals heard together end the command.

A process recycled because an ``async def`` task held its event loop past --task-timeout,
whose call still holds the loop at the end of --grace-period, exits 1 as documented
(docs/worker.md, What blocks the loop): a recycle that left a task to the reaper. The supervisor
logged ``Recycled worker process died ... status=exit code 1`` (ERROR) for it, and under
``--burst`` the command exited 5, "a worker process died during the burst", though every process
ended as the worker meant it to. Now it logs the recycle with the task left running, and a burst
exits 1, as a stop that left tasks running past the grace period does.

The real ``threadmill_worker`` command in a subprocess. The task blocks on a FIFO the test opens
only at the end, so its call outlasts the grace period: no timing involved.
"""

import os
import re
import signal
import textwrap
from collections.abc import Callable
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command, release_fifo, wait_until

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes
LEFT_RUNNING = (
    r"WARNING .*Worker process recycled with tasks still running after the grace period "
    r"slot=0 pid={pid} \(named in its ERROR above"
)


@task
async def holds_the_loop(fifo: str) -> str:
    """Block the event loop (a sync read, the mistake under test) until the test opens
    ``fifo`` for writing and closes it."""
    with open(fifo) as held:  # blocks in open() until a writer comes
        return held.read()


def test_a_burst_whose_recycled_process_left_a_task_running_exits_1_not_5(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    held = holds_the_loop.enqueue(str(fifo))
    worker = start_worker("--burst", "--task-timeout", "1", "--grace-period", "1")
    try:
        code = worker.wait(WAIT_S)
    finally:
        release_fifo(fifo)  # a process the test gave up on ends its read
    recycled = worker.child_pids()[0]
    assert "Worker process died" not in worker.log
    assert "Recycled worker process died" not in worker.log
    assert code == 1, worker.log  # forced: a task ran past the grace period, left to the reaper
    assert re.search(LEFT_RUNNING.format(pid=recycled), worker.log), worker.log
    held.refresh()
    assert (
        held.status == TaskResultStatus.RUNNING
    )  # leased, for the reaper: the burst did not end it


def test_a_recycled_process_that_left_a_task_running_is_neither_a_death_nor_restarted(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    holds_the_loop.enqueue(str(fifo))
    worker = start_worker("--task-timeout", "1", "--grace-period", "1")
    try:
        worker.wait_for_log(r"Worker process recycling slot=0")
        recycled = worker.child_pids()[0]
        worker.wait_for_log(LEFT_RUNNING.format(pid=recycled), WAIT_S)
        worker.signal()
        assert worker.wait(WAIT_S) == 0, worker.log
    finally:
        release_fifo(fifo)
    assert "died" not in worker.log
    assert len(worker.child_pids()) == 2  # the replacement, started as it began recycling


# threadmill_worker with argv[1:], whose supervisor restarts a dead process only after 10
# minutes: its slot waits for that restart while the test signals.
SLOW_RESTARTS = textwrap.dedent(
    """
    import sys

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import supervisor
    from django_threadmill.worker.backoff import Backoff

    supervisor.RESTART_BACKOFF = Backoff(first_s=600.0, max_s=600.0)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_two_signals_heard_together_while_a_slot_waits_for_its_restart_end_the_command(
    redis_url: str, key_prefix: str
) -> None:
    """SIGINT and SIGTERM at once (Ctrl-C as a process manager stops the worker) were acted
    on as the second signal alone: the live processes were killed, but the slot waiting for
    its restart was never ended, and the supervisor slept for good with no process left."""
    worker = Command(redis_url, key_prefix, "--skip-checks", "--processes", "2", code=SLOW_RESTARTS)
    try:
        wait_until(
            lambda: worker.log.count("Worker process started") == 2, "both processes started"
        )
        dead = worker.child_pids()[0]
        os.kill(dead, signal.SIGKILL)
        worker.wait_for_log(
            rf"Worker process died slot=0 pid={dead} status=signal 9 restart_in_s=600.0"
        )
        # Stopped, the supervisor takes both signals as it resumes, before its loop acts.
        worker.signal(signal.SIGSTOP)
        worker.signal(signal.SIGTERM)
        worker.signal(signal.SIGINT)
        worker.signal(signal.SIGCONT)
        assert worker.wait(WAIT_S) == 1, worker.log
        log = worker.log
    finally:
        worker.close()
    assert "Second signal: killing worker processes count=1" in log
    assert "Supervisor stopped exit_code=1" in log
