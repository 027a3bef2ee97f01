"""A worker process that crashes, or that Redis refuses, while the supervisor stops on a signal:
the command exits with the code that names what happened (5, 4), and the lines say it
(docs/worker.md, Exit codes; Shutdown).

Before the fix a process whose own stop raised (exit code 5), or that something else killed
meanwhile, made the command exit 1, the code of tasks still running after the grace period, and
the supervisor said nothing of it; a process Redis refused during the stop (exit code 4) made it
exit 1 too. And a stop after Redis refused an outcome said the work was left to the reaper
because "Redis did not take them in time": a Redis too slow, whose fix is to wait, where none
helps (after a refused WAITAOF too, which tests/faults' test of a Redis that refuses scripts or
WAITAOF checks).

The real ``threadmill_worker`` command in a subprocess; tasks hold their thread until the test
creates a file: no timing involved.
"""

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from tests.conftest import tasks_setting
from tests.faults.test_a_command_an_acl_keeps_from_a_script_is_refused_naming_the_rule import (
    acl_user_url,
)
from tests.faults.test_an_outcome_an_acl_keeps_from_being_written_stops_the_worker_and_is_left_to_the_reaper import (  # noqa: E501
    ALL_BUT_EXPIRY,
)
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until, worker

from . import tasks
from .test_a_recycled_process_that_left_writes_to_the_reaper_is_replaced_at_once_and_a_stop_that_raises_is_a_crash import (  # noqa: E501
    breaks_its_process_stop,
)

WAIT_S = 60.0  # a bound on each wait, never reached when the test passes
LEFT_BY_A_REFUSAL = re.compile(
    r"ERROR .*Stopped with work left to the reaper unwritten=1 unreleased=0 "
    r"acquire_unanswered=False worker_id=\S+ \(Redis refused this worker, which no wait fixes: "
    r"the CRITICAL line above names the refusal and its fix;"
)
SAID_SLOW = "Redis did not take them in time"


def running(result: TaskResult) -> None:
    """Wait until the worker has written that ``result``'s task started."""

    def started() -> bool:
        result.refresh()
        return result.status == TaskResultStatus.RUNNING

    wait_until(started, "the task running")


def stopped_on_sigterm(command: Command, release: Path) -> int:
    """SIGTERM the supervisor while its process runs a task; let the task end once the process
    stops; return the command's exit code."""
    command.signal(signal.SIGTERM)
    command.wait_for_log(r"Stopping on supervisor request worker_id=")
    release.touch()
    return command.wait(WAIT_S)


def test_a_process_whose_stop_raises_as_the_supervisor_stops_makes_the_command_exit_5(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    command = start_worker("--threads", "1", "--reap-interval", "0")
    release = tmp_path / "release"
    running(breaks_its_process_stop.enqueue(str(release)))
    [pid] = command.child_pids()

    assert stopped_on_sigterm(command, release) == ExitCode.CRASHED, command.log
    log = command.log
    assert re.search(
        rf"CRITICAL .*Worker process failed, exiting worker_id=\S+:{pid}:\S+ exit_code=5\n",
        log,
    ), log
    assert re.search(
        rf"ERROR .*Worker process died while stopping slot=0 pid={pid} status=exit code 5 "
        r"\(what it had not written or handed back waits for its leases to lapse and the "
        r"reaper\)",
        log,
    ), log
    assert "Supervisor stopped exit_code=5" in log
    assert "still running after the grace period" not in log


def test_a_process_killed_by_another_as_the_supervisor_stops_makes_the_command_exit_5(
    start_worker: Callable[..., Command], tmp_path: Path, backend: ThreadmillTaskBackend
) -> None:
    """Killed during its grace period by something other than the supervisor (the kernel's
    OOM killer, an operator's SIGKILL): a death, as under --burst, not tasks left running; and
    signed off by the supervisor, as it cannot sign itself off (``threadmill_health`` counted
    it live until its lease would end)."""
    command = start_worker("--threads", "1", "--reap-interval", "0")
    running(tasks.wait_for_file.enqueue(str(tmp_path / "never")))
    [pid] = command.child_pids()
    command.signal(signal.SIGTERM)
    command.wait_for_log(r"Stopping on supervisor request worker_id=")
    os.kill(pid, signal.SIGKILL)

    assert command.wait(WAIT_S) == ExitCode.CRASHED, command.log
    assert re.search(
        rf"ERROR .*Worker process died while stopping slot=0 pid={pid} status=signal 9 ",
        command.log,
    ), command.log
    sighted = backend.broker.client.zrange(backend.broker.queue_keys("default").workers, 0, -1)
    assert not [worker_id for worker_id in sighted if f":{pid}:" in str(worker_id)], sighted


def test_a_process_redis_refuses_as_the_supervisor_stops_makes_the_command_exit_4(
    own_redis: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    """The task's outcome is the first call finish.lua's expiry is refused in: the refusal
    comes during the stop, the task having run through it."""
    app_url = acl_user_url(own_redis, key_prefix, *ALL_BUT_EXPIRY)
    release = tmp_path / "release"
    with override_settings(TASKS=tasks_setting(own_redis.url, key_prefix)):
        result = tasks.wait_for_file.enqueue(str(release))
        command = worker(app_url, key_prefix, "--threads", "1", "--reap-interval", "0")
        try:
            running(result)
            code = stopped_on_sigterm(command, release)
            log = command.log
        finally:
            command.close()

    assert code == ExitCode.REFUSED, log  # no restart can help
    assert log.count("Redis refused this worker, stopping") == 1, log
    assert "Ack batch left to the reaper kind=finish size=1" in log
    assert LEFT_BY_A_REFUSAL.search(log), log
    assert SAID_SLOW not in log
    assert "Supervisor stopped exit_code=4" in log
