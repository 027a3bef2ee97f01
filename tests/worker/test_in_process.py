"""--processes 0 --burst: the worker runs in the command's own process, without forking."""

import contextlib
import os
import resource
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until

from . import async_tasks, tasks


def test_the_command_runs_sync_and_async_tasks_in_its_own_process(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    results = [tasks.pid.enqueue() for _ in range(3)]
    results += [async_tasks.nap.enqueue(0, str(tmp_path / "naps.log")) for _ in range(3)]
    command = start_worker("--processes", "0", "--burst", "--threads", "2")
    assert command.wait(60) == 0, command.log
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.return_value == command.process.pid
    assert "Supervisor started" not in command.log
    assert "Worker process spawned" not in command.log


def open_pipes() -> set[str]:
    """The pipes this process holds open, by their inode."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("pipe:"):
                found.add(target)
    return found


@pytest.mark.usefixtures("logging_put_back")
def test_call_command_runs_the_tasks_here_and_puts_the_signal_handlers_back(
    backend: ThreadmillTaskBackend,
) -> None:
    results = [tasks.pid.enqueue() for _ in range(2)]
    handlers = [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)]
    call_command("threadmill_worker", "--processes", "0", "--burst", "--verbosity", "0")
    pipes = open_pipes()
    call_command("threadmill_worker", "--processes", "0", "--burst", "--verbosity", "0")
    assert open_pipes() <= pipes  # the wake-up pipes are closed (a pool may open sockets)
    assert [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)] == handlers
    for result in results:
        result.refresh()
        assert result.return_value == os.getpid()


@pytest.fixture
def descriptors_past_1023() -> Iterator[None]:
    """Hold this process's descriptors up to past 1023, as a long test run or a project that
    runs the worker in itself may: what it opens next is numbered beyond select()'s reach."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit of open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.dup(0) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.usefixtures("logging_put_back", "descriptors_past_1023")
def test_the_command_runs_here_with_descriptors_numbered_past_1023(
    backend: ThreadmillTaskBackend,
) -> None:
    """The main thread waited with select(), which refuses a descriptor past 1023: the
    command failed with "filedescriptor out of range in select()", its threads left running."""
    result = tasks.pid.enqueue()
    call_command("threadmill_worker", "--processes", "0", "--burst", "--verbosity", "0")
    result.refresh()
    assert result.return_value == os.getpid()


@pytest.mark.parametrize("how", ["task timeout", "grace period"])
def test_a_task_given_up_on_does_not_hold_the_commands_exit(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    how: str,
) -> None:
    """A forked worker process ends with os._exit; here the command's own process held its exit
    for as long as the abandoned task's thread ran (for good, for a task that hangs)."""
    never = tmp_path / "never"
    stuck = tasks.wait_for_file.enqueue(str(never))
    try:
        if how == "task timeout":
            command = start_worker("--processes", "0", "--burst", "--task-timeout", "1")
            assert command.wait(60) == 0, command.log
            assert backend.get_result(stuck.id).status == TaskResultStatus.FAILED
        else:
            command = start_worker("--processes", "0", "--burst", "--grace-period", "0.2")
            wait_until(
                lambda: backend.get_result(stuck.id).status == TaskResultStatus.RUNNING,
                "the task running",
            )
            command.signal(signal.SIGTERM)
            assert command.wait(60) == 1, command.log  # forced: it outlived the grace period
            assert "Threads still running after the grace period" in command.log
    finally:
        never.touch()  # the task's thread ends, had the process lived on
