"""The supervisor restarts dead processes, recycles on --max-tasks, gives up on crash loops,
and replaces at once a process a SIGTERM of its own stopped, even one sent just after the fork."""

import ctypes
import os
import signal
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.supervisor import MAX_FAST_FAILURES, Supervisor
from tests.support import Command, release_fifo, wait_until
from tests.worker import tasks
from tests.worker.support import run_script, worker_options


def test_a_killed_worker_process_is_restarted_and_work_goes_on(
    start_worker: Callable[..., Command],
) -> None:
    worker = start_worker("--reap-interval", "0")
    first = tasks.pid.enqueue()
    wait_until(lambda: first.refresh() or first.is_finished, "the first task finishing")
    [original] = worker.child_pids()
    assert first.return_value == original

    os.kill(original, signal.SIGKILL)
    worker.wait_for_log(rf"Worker process died slot=0 pid={original} status=signal 9")
    wait_until(lambda: len(worker.child_pids()) == 2, "a replacement process")
    second = tasks.pid.enqueue()
    wait_until(lambda: second.refresh() or second.is_finished, "a task on the new process")
    assert second.return_value == worker.child_pids()[1] != original

    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def stopped_alone(pid: int) -> str:
    """The supervisor's line for a process that exited 0 without being asked by it."""
    return (
        r"WARNING django_threadmill\.worker\.supervisor pid=\d+ \S+ Worker process stopped "
        rf"slot=0 pid={pid} status=exit code 0 \(asked directly"
    )


def started_process(worker: Command, n: int) -> int:
    """Wait until the worker's process number ``n`` (from 0) has started; return its pid."""
    wait_until(lambda: len(worker.child_pids()) > n, f"worker process {n} spawned")
    pid = worker.child_pids()[n]
    worker.wait_for_log(rf"Worker process started worker_id=\S+ pid={pid} ")
    return pid


def test_a_process_sent_sigterm_alone_is_replaced_at_once_and_not_counted_as_a_crash(
    start_worker: Callable[..., Command],
) -> None:
    """Its exit 0 was an ERROR "Worker process died ... exit code 0", restarted with backoff,
    and as many in a row as the give-up limit made the supervisor give up (exit 2)."""
    worker = start_worker("--reap-interval", "0")
    for n in range(MAX_FAST_FAILURES):
        pid = started_process(worker, n)
        os.kill(pid, signal.SIGTERM)
        worker.wait_for_log(stopped_alone(pid))

    task = tasks.pid.enqueue()
    wait_until(lambda: task.refresh() or task.is_finished, "a task on the last process")
    assert task.return_value == worker.child_pids()[MAX_FAST_FAILURES]
    assert "Worker process died" not in worker.log
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


# tgkill(2), which signals one thread of another process; Python has no call for it.
TGKILL = {"x86_64": 234, "aarch64": 131}.get(os.uname().machine)


def signal_thread(pid: int, tid: int, signum: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(TGKILL, pid, tid, signum) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}, {signum})")


@pytest.mark.skipif(TGKILL is None, reason="tgkill's number is known here for x86_64, aarch64")
def test_a_sigterm_the_kernel_hands_to_another_thread_still_stops_the_process(
    start_worker: Callable[..., Command],
) -> None:
    """The kernel may deliver a SIGTERM sent to the pid to any thread; Python runs the handler
    in the main thread only, which slept in select() with no timeout, unwoken, and the process
    ran on (once in CI). The signal now writes to the pipe the main thread sleeps on."""
    worker = start_worker("--reap-interval", "0")
    pid = started_process(worker, 0)
    task = tasks.pid.enqueue()  # once it ran, the main thread sleeps: its threads are up
    wait_until(lambda: task.refresh() or task.is_finished, "a task run")
    threads = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)

    signal_thread(pid, threads[-1], signal.SIGTERM)

    worker.wait_for_log(stopped_alone(pid))
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log


def test_ctrl_c_to_every_process_stops_the_worker_once(
    start_worker: Callable[..., Command],
) -> None:
    """Ctrl-C reaches the supervisor and its processes alike: the processes ignore SIGINT and
    stop on the supervisor's relayed request, so none counts two signals (docs/design.md)."""
    worker = start_worker("--reap-interval", "0")
    pid = started_process(worker, 0)

    os.kill(pid, signal.SIGINT)
    worker.signal(signal.SIGINT)

    assert worker.wait() == 0, worker.log
    assert "Stopping on supervisor request" in worker.log
    assert "Stopping on SIGINT" not in worker.log


# The first worker process waits after the fork, before WorkerProcess.run sets its handlers,
# until the test has signalled it and opened the FIFO (argv[1]); argv[2] marks it as taken, so
# the processes after it do not wait.
HOLD_THE_FIRST_PROCESS = textwrap.dedent(
    """
    import os
    import sys

    import django_threadmill.worker.process as process
    from django.core.management import execute_from_command_line

    fifo, taken = sys.argv[1], sys.argv[2]
    init = process.WorkerProcess.__init__

    def held(self, *args, **kwargs):
        try:
            os.close(os.open(taken, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            pass
        else:
            print(f"Held before its handlers pid={os.getpid()}", flush=True)
            with open(fifo) as released:
                released.read()
        init(self, *args, **kwargs)

    process.WorkerProcess.__init__ = held
    execute_from_command_line(
        ["manage.py", "threadmill_worker", "--processes", "1", "--reap-interval", "0"]
    )
    """
)


def test_a_sigterm_sent_to_a_process_before_its_handlers_are_set_stops_it(
    redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """Until WorkerProcess.run set its handlers, a forked process ran the supervisor's, which
    stopped nothing there: a SIGTERM sent just after the spawn was lost, the process ran on."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    worker = Command(
        redis_url, key_prefix, str(fifo), str(tmp_path / "taken"), code=HOLD_THE_FIRST_PROCESS
    )
    try:
        held = int(worker.wait_for_log(r"Held before its handlers pid=(\d+)")[1])
        os.kill(held, signal.SIGTERM)
        wait_until(lambda: release_fifo(fifo), "the held process opening the FIFO")

        worker.wait_for_log(stopped_alone(held))
        task = tasks.pid.enqueue()
        wait_until(lambda: task.refresh() or task.is_finished, "a task on the fresh process")
        assert task.return_value == worker.child_pids()[1] != held
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log
    finally:
        worker.close()
        release_fifo(fifo)  # a held process the test failed before releasing ends, not waits


def test_a_burst_in_which_a_process_died_exits_5_and_its_tasks_stay_leased(
    broker: Broker, redis_client: redis.Redis, start_worker: Callable[..., Command]
) -> None:
    ending = tasks.end_process.enqueue()
    worker = start_worker("--burst", "--threads", "1", "--reap-interval", "0")
    # The replacement process finds the queues empty: what the dead one held is leased, for
    # the reaper to settle once the lease expires.
    assert worker.wait() == 5, worker.log
    assert "Worker process died slot=0" in worker.log
    assert redis_client.zscore(broker.queue_keys("default").leases, ending.id) is not None
    ending.refresh()
    assert not ending.is_finished


def recycled_runs(
    start_worker: Callable[..., Command], count: int, *args: str
) -> tuple[Counter[int], str]:
    """Run ``count`` tasks that return their process's pid on a worker started with ``args``,
    stop it; return how many ran in each process, and the worker's log."""
    results = [tasks.pid.enqueue() for _ in range(count)]
    worker = start_worker(*args)
    wait_until(
        lambda: all(result.refresh() or result.is_finished for result in results),
        "every task finishing",
        timeout_s=60,
    )
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
    assert all(result.status == TaskResultStatus.SUCCESSFUL for result in results)
    return Counter(result.return_value for result in results), worker.log


def test_max_tasks_recycles_the_process(start_worker: Callable[..., Command]) -> None:
    runs_per_process, log = recycled_runs(start_worker, 12, "--max-tasks", "4", "--prefetch", "1")
    assert "Worker process recycled slot=0" in log
    # A process stops taking tasks once 4 results are written; the ones it already took (one
    # buffered, one running: --prefetch 1, one thread) still run there.
    assert len(runs_per_process) >= 2
    assert max(runs_per_process.values()) <= 4 + 2


def test_max_tasks_with_threads_runs_no_more_than_the_tasks_already_running(
    start_worker: Callable[..., Command],
) -> None:
    """The other threads went on taking tasks while the prefetcher's stop made its round trip:
    up to 27 ran in a process recycled at 10. Then, with the buffer closed after the count lock
    was let go, up to 17 on a loaded machine: the other threads ran tasks while the tenth's
    thread waited for the GIL between the two."""
    runs_per_process, _ = recycled_runs(start_worker, 80, "--threads", "4", "--max-tasks", "10")
    # The tenth, and at most one more task on each of the three other threads.
    assert max(runs_per_process.values()) <= 10 + 3, runs_per_process


def test_processes_that_keep_crashing_at_start_make_the_command_give_up(
    redis_url: str, key_prefix: str
) -> None:
    # Break the worker process (not the supervisor) the way a bad import at fork time would.
    script = (
        "import sys;"
        "import django_threadmill.worker.process as process;"
        "process.WorkerProcess.run = lambda *args: 1 / 0;"
        "from django.core.management import execute_from_command_line;"
        "execute_from_command_line(['manage.py', 'threadmill_worker', '--processes', '1'])"
    )
    completed = run_script(script, redis_url, key_prefix)
    assert completed.returncode == 2, completed.stderr
    assert "Worker processes keep dying at start slot=0 status=exit code 5 crashes=5" in (
        completed.stderr
    )


def test_a_process_the_system_refuses_threads_stops_instead_of_hanging(
    redis_url: str, key_prefix: str
) -> None:
    # The third worker thread cannot start, as under a thread or memory limit; the ones
    # started before it, non-daemon, held the process up for good.
    script = textwrap.dedent(
        """
        import django_threadmill.worker.threads as threads
        from django.core.management import execute_from_command_line

        start, started = threads.WorkerThread.start, []

        def refuse(self):
            started.append(self)
            if len(started) == 3:
                raise RuntimeError("can't start new thread")
            start(self)

        threads.WorkerThread.start = refuse
        execute_from_command_line(
            ["manage.py", "threadmill_worker", "--processes", "0", "--burst", "--threads", "4"]
        )
        """
    )
    completed = run_script(script, redis_url, key_prefix)
    assert completed.returncode == 5, completed.stderr
    assert "Worker process could not start its threads, stopping error=can't start" in (
        completed.stderr
    )


def test_a_stopping_supervisor_waits_for_its_processes_not_for_timers_past_due(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reap, a schedule or a restart that fell due while processes finish their grace
    period is not done; its timer must not make the wait return at once (a busy loop)."""
    options = worker_options(backend_alias=backend.alias, grace_period_s=30.0, reap_interval_s=1.0)
    supervisor = Supervisor(options, backend)
    supervisor.chores.next_reap = supervisor.chores.next_schedule = time.monotonic() - 5
    supervisor.slots[0].restart_at = time.monotonic() - 5
    timeouts: list[float | None] = []
    monkeypatch.setattr(
        "django_threadmill.worker.supervisor.wait",
        lambda objects, timeout: timeouts.append(timeout) or [],
    )
    try:
        supervisor._wait_for_event()
        supervisor.signals = 1
        supervisor._wait_for_event()
    finally:
        supervisor.wakeup.close()

    assert timeouts == [0.0, None]
