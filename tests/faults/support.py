"""Helpers for the fault tests: executions counted outside Redis, results read back, Redis
paused."""

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.servers.redis_server import RedisProcess

from . import tasks

CALL_WAIT_S = 60.0  # for a call of the process watched to wait on the paused Redis (a
# bound only: wait_until's, for a command just started on a loaded machine)
PAUSE_TRY_S = 1.0  # paused this long with nothing unread, Redis goes on a moment


def enqueue_counted(backend: ThreadmillTaskBackend, log: Path, count: int) -> list[TaskResult]:
    """Enqueue ``count`` tasks that append their id to ``log`` each time they run."""
    return backend.enqueue_many(tasks.count_run, [((str(log),), {}) for _ in range(count)])


def executions(log: Path) -> Counter[str]:
    """Count executions per task id from the tasks' own log."""
    return Counter(log.read_text().split()) if log.exists() else Counter()


def statuses(results: list[TaskResult]) -> Counter[TaskResultStatus]:
    """Refresh every result and count their statuses."""
    for result in results:
        result.refresh()
    return Counter(result.status for result in results)


def all_successful(results: list[TaskResult]) -> bool:
    return statuses(results) == Counter({TaskResultStatus.SUCCESSFUL: len(results)})


def states(client: redis.Redis, broker: Broker, results: list[TaskResult]) -> Counter[str]:
    """Count the stored states of ``results`` with one pipelined read (no per-task trips)."""
    with client.pipeline(transaction=False) as pipe:
        for result in results:
            pipe.hget(broker.record_key(result.id) or "", "state")
        return Counter(pipe.execute())


def request_unread_from(pid: int, server_port: int) -> bool:
    """Tell whether a request process ``pid`` sent to the server on ``server_port`` (a paused
    one) waits unread in the server's socket, from the kernel's TCP table (Linux)."""
    return any(_unread_per_connection(pid, server_port))


def _unread_per_connection(pid: int, server_port: int) -> list[int]:
    """Return, for each connection of process ``pid`` to the server on ``server_port``, the
    bytes the server has received on it and not read (none: it has no connection)."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:  # it ended
        return []
    sockets = {
        target.removeprefix("socket:[").removesuffix("]")
        for fd in fds
        if (target := _link(fd)).startswith("socket:[")
    }
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    # Columns: sl, local address, remote address, state, tx_queue:rx_queue, ..., inode (10th).
    ports = {int(row[1].split(":")[1], 16) for row in rows if row[9] in sockets}
    return [
        int(row[4].split(":")[1], 16)
        for row in rows
        if int(row[1].split(":")[1], 16) == server_port and int(row[2].split(":")[1], 16) in ports
    ]


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:  # closed since the listing
        return ""


@contextmanager
def paused(server: RedisProcess) -> Iterator[None]:
    """Pause ``server`` for the block (SIGSTOP); it always goes on after (SIGCONT)."""
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


@contextmanager
def waiting_on_paused(server: RedisProcess, process: subprocess.Popen[Any]) -> Iterator[None]:
    """Pause ``server`` and return once ``process`` has sent it a request it has not read (a
    call waiting on the silent Redis); resume it when the block ends.

    Redis stays paused while the process has no connection to it (a command just started: on a
    loaded 2-core machine one took 24 s to reach Redis), so its first request is left unread.
    A pause that lands after Redis read a request, before it answered, leaves that call
    waiting with nothing unread, for good: Redis then goes on until it has answered a PING of
    its own (so it answered that call too) and is paused again, until a request of the process
    lies unread (a reap loop on a loaded CI machine met it). Resumed for a moment only, Redis
    was paused again before the scheduler ran it, on a loaded 2-core machine: no call of the
    process went on for 30 s.
    """
    deadline = time.monotonic() + CALL_WAIT_S
    with redis.Redis.from_url(server.url, socket_timeout=CALL_WAIT_S) as probe:
        while True:
            with paused(server):
                if _a_request_left_unread(server, process, deadline):
                    yield
                    return
            probe.ping()  # Redis went on: what it had read before the pause is answered


def _a_request_left_unread(
    server: RedisProcess, process: subprocess.Popen[Any], deadline: float
) -> bool:
    """While ``server`` is paused, poll until a request of ``process`` lies unread (True) or it
    has been connected for PAUSE_TRY_S with none unread (False); fail once ``deadline`` passed
    or the process ended."""
    connected_since: float | None = None
    while True:
        if process.poll() is not None:
            raise AssertionError(
                f"the process ended (exit code {process.returncode}) before a call of it "
                "waited on the paused Redis"
            )
        unread = _unread_per_connection(process.pid, server.port)
        if any(unread):
            return True
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"no call waited on the paused Redis within {CALL_WAIT_S}s")
        connected_since = (connected_since or now) if unread else None
        if connected_since is not None and now - connected_since > PAUSE_TRY_S:
            return False
        time.sleep(0.01)  # polling with a deadline, not synchronising
