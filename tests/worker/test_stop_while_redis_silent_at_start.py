"""A stop while the worker starts against a Redis that takes connections and never answers
(paused, a frozen host, a proxy whose far side is gone): every call of the start-up (the system
checks, the supervisor's first pass, a process's first look at Redis) held the stop for
``socket_timeout``; now the command exits 0 at once, saying start-up was interrupted
(docs/worker.md, Stopping during start-up)."""

import re
import signal
import socket
from collections.abc import Iterator

import pytest

from django_threadmill.worker.exit_codes import ExitCode
from tests.faults.support import waiting_on_paused
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until, worker

# Far past the deadline below: a stop that waits for the call fails the test, whatever the load.
SOCKET_TIMEOUT_S = 120
SILENT = {"socket_timeout": SOCKET_TIMEOUT_S}
# What a command may take to exit once stopped on a loaded machine: a deadline, not a measure.
EXIT_DEADLINE_S = 30.0


class SilentServer:
    """A listener that takes connections (the kernel accepts them) and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"
        self.connections: list[socket.socket] = []

    def request_waiting(self) -> bool:
        """Tell whether a client sent a request that waits unanswered."""
        while True:
            try:
                connection, _ = self.listener.accept()
            except BlockingIOError:
                break
            self.connections.append(connection)
        return any(_unread(connection) for connection in self.connections)

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.listener.close()


def _unread(connection: socket.socket) -> bool:
    try:
        return bool(connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def stopped_while_waiting(command: Command, silent: SilentServer, signum: int) -> str:
    """Send ``signum`` once the command waits on the silent server; return its log once it
    exited 0."""
    try:
        wait_until(silent.request_waiting, "a request to the silent server")
        command.signal(signum)
        assert command.wait(EXIT_DEADLINE_S) == ExitCode.OK, command.log
        return command.log
    finally:
        command.close()


@pytest.mark.parametrize(
    ("args", "interrupted"),
    [
        ((), r"Start-up interrupted on SIGTERM: the system checks wait for Redis"),
        (("--skip-checks",), r"Start-up interrupted pid=\d+: no worker process started"),
        (
            ("--skip-checks", "--reap-interval", "0"),
            r"Start-up interrupted worker_id=\S+: stopped while Redis had not answered",
        ),
        (
            ("--skip-checks", "--processes", "0", "--burst"),
            r"Start-up interrupted pid=\d+: no worker process started",
        ),
        (
            ("--skip-checks", "--processes", "0", "--burst", "--reap-interval", "0"),
            r"Start-up interrupted worker_id=\S+: stopped while Redis had not answered",
        ),
    ],
    ids=[
        "system checks",
        "first reap pass",
        "worker process start",
        "one process, first reap pass",
        "one process, worker start",
    ],
)
def test_a_sigterm_during_start_up_against_a_silent_redis_exits_0_at_once(
    silent: SilentServer, key_prefix: str, args: tuple[str, ...], interrupted: str
) -> None:
    """The checks used to die of the signal (no handler yet, exit -15), and the rest waited
    for the socket timeout: the first reap pass before exiting, a worker process before it
    heard the supervisor's stop."""
    command = worker(silent.url, key_prefix, *args, options=SILENT)
    log = stopped_while_waiting(command, silent, signal.SIGTERM)
    assert re.search(interrupted, log), log
    assert "Traceback" not in log


def test_ctrl_c_during_the_checks_exits_0_without_a_traceback(
    silent: SilentServer, key_prefix: str
) -> None:
    """SIGINT raised KeyboardInterrupt inside redis-py: a traceback, and no word of a stop."""
    command = worker(silent.url, key_prefix, options=SILENT)
    log = stopped_while_waiting(command, silent, signal.SIGINT)
    assert "Start-up interrupted on SIGINT: the system checks wait for Redis" in log
    assert "Traceback" not in log


def test_the_reaper_stopped_during_its_checks_exits_0_at_once(
    silent: SilentServer, key_prefix: str
) -> None:
    command = Command(silent.url, key_prefix, "threadmill_reap", options=SILENT)
    log = stopped_while_waiting(command, silent, signal.SIGTERM)
    assert "Start-up interrupted on SIGTERM: the system checks wait for Redis" in log


def test_the_supervisor_exits_while_its_reap_pass_waits_on_silent_redis(
    own_redis: RedisProcess, key_prefix: str
) -> None:
    """The processes were told at once, but the supervisor exited only once the reap pass's
    call returned: after the socket timeout. The process's own stop ends within its bound
    (grace period + 10 s: docs/worker.md, Shutdown)."""
    args = ("--threads", "1", "--reap-interval", "0.1", "--grace-period", "0.5")
    command = worker(own_redis.url, key_prefix, *args, options=SILENT)
    try:
        command.wait_for_log(r"Worker process started")
        with waiting_on_paused(own_redis, command.process):
            command.signal(signal.SIGTERM)
            code = command.wait(EXIT_DEADLINE_S)
        assert code in (ExitCode.OK, ExitCode.DROPPED), command.log
        assert "Stopping without waiting for Redis call=reap" in command.log
    finally:
        command.close()
