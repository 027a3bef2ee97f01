"""Redis silent at shutdown (paused with SIGSTOP: the kernel accepts, nothing answers): the stop
ends within its bound (docs/worker.md, Shutdown), its exit code says what it left to the reaper,
and the task whose outcome it could not write is not lost."""

import os
import re
import signal
from pathlib import Path

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.exit_codes import ExitCode
from django_threadmill.worker.shutdown import STOP_MARGIN_S
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until, worker

from . import tasks
from .support import paused, waiting_on_paused

GRACE_S = 0.5
LEASE_TTL_S = 2.0  # the lapsed lease is reaped soon after Redis answers again
# What the command may take past the stop's bound to exit (Python, the supervisor, a loaded
# machine): a generous deadline to wait for, not a measure of speed.
EXIT_SLACK_S = 20.0


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


def running_worker(
    server: RedisProcess, key_prefix: str, release: Path, options: dict[str, object]
) -> tuple[Command, TaskResult]:
    """Start a worker with one task running that ends once ``release`` exists."""
    result = tasks.wait_for_file.enqueue(str(release))
    # No reap pass in the supervisor: it would wait for the paused Redis too.
    args = ("--threads", "1", "--grace-period", str(GRACE_S), "--reap-interval", "0")
    command = worker(server.url, key_prefix, *args, lease_ttl_s=LEASE_TTL_S, options=options)
    wait_until(
        lambda: result.refresh() or result.status == TaskResultStatus.RUNNING, "the task running"
    )
    return command, result


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    "options", [{}, {"socket_timeout": None}], ids=["socket_timeout=10", "socket_timeout=None"]
)
def test_a_stop_with_redis_silent_ends_in_its_bound_and_says_what_it_left(
    own_redis: RedisProcess, key_prefix: str, tmp_path: Path, options: dict[str, object]
) -> None:
    """The wake token, the lease keeper's sign-off and the joins of the keeper and the loop
    monitor waited for Redis: 40 s with a grace period of 2 s, for good with socket_timeout
    None; and the outcome it dropped ended the process with 0."""
    release = tmp_path / "release"
    command, result = running_worker(own_redis, key_prefix, release, options)
    try:
        with paused(own_redis):
            release.touch()  # the task ends while Redis is silent: its outcome cannot be written
            command.signal(signal.SIGTERM)
            code = command.wait(GRACE_S + STOP_MARGIN_S + EXIT_SLACK_S)
        assert code == ExitCode.DROPPED, command.log
        assert "Stopped with work left to the reaper unwritten=" in command.log
        if options:  # with no socket timeout, the wake token's call never returns
            assert re.search(r"exiting without threads names=\S*threadmill-stop-wake", command.log)
    finally:
        command.close()

    # Its outcome, written once Redis took the call, or its lease reaped and the task run again.
    again = worker(own_redis.url, key_prefix, "--threads", "1", lease_ttl_s=LEASE_TTL_S)
    try:
        wait_until(lambda: result.refresh() or result.is_finished, "the task finishing")
        again.signal(signal.SIGTERM)
        assert again.wait(30) == 0, again.log
    finally:
        again.close()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == "done"


@pytest.mark.timeout(150)
def test_a_process_that_left_work_to_the_reaper_is_replaced_at_once_not_as_a_crash(
    own_redis: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    """Asked to stop alone (SIGTERM to its pid) while Redis is silent, it exits 6: a stop, which
    the supervisor does not count toward giving up."""
    release = tmp_path / "release"
    command, _ = running_worker(own_redis, key_prefix, release, {})
    try:
        [pid] = command.child_pids()
        with paused(own_redis):
            release.touch()
            os.kill(pid, signal.SIGTERM)
            command.wait_for_log(
                rf"WARNING django_threadmill\.worker\.supervisor pid=\d+ \S+ Worker process "
                rf"stopped slot=0 pid={pid} status=exit code 6 \(Redis did not take",
                GRACE_S + STOP_MARGIN_S + EXIT_SLACK_S,
            )
        wait_until(lambda: len(command.child_pids()) == 2, "a fresh process")
        fresh = command.child_pids()[1]
        command.wait_for_log(rf"Worker process started worker_id=\S+ pid={fresh} ")
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
        assert "Worker process died" not in command.log
    finally:
        command.close()


@pytest.mark.timeout(150)
def test_a_stop_signal_reaches_the_processes_while_a_reap_pass_waits_on_silent_redis(
    own_redis: RedisProcess, key_prefix: str
) -> None:
    """The supervisor's reap pass runs on its main thread. A SIGTERM that came while the pass
    waited on a silent Redis was relayed once the call returned: after the socket timeout,
    with the grace period already running out wherever the signal was meant to stop work."""
    args = ("--threads", "1", "--reap-interval", "0.1")
    command = worker(own_redis.url, key_prefix, *args, options={"socket_timeout": 120})
    try:
        command.wait_for_log(r"Worker process started")
        with waiting_on_paused(own_redis, command.process):
            command.signal(signal.SIGTERM)
            command.wait_for_log(r"Stopping on supervisor request", 30)
        assert command.wait(60) == 0, command.log
    finally:
        command.close()
