"""Helpers for the fault tests: executions counted outside Redis, results read back, Redis
paused."""

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus
from tests.servers.redis_server import RedisProcess
from tests.support import holds_within

from . import tasks

CALL_WAIT_S = 30.0  # for a call of the process watched to wait on the paused Redis
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
    sockets = {
        target.removeprefix("socket:[").removesuffix("]")
        for fd in Path(f"/proc/{pid}/fd").iterdir()
        if (target := _link(fd)).startswith("socket:[")
    }
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    # Columns: sl, local address, remote address, state, tx_queue:rx_queue, ..., inode (10th).
    ports = {int(row[1].split(":")[1], 16) for row in rows if row[9] in sockets}
    return any(
        int(row[1].split(":")[1], 16) == server_port
        and int(row[2].split(":")[1], 16) in ports
        and int(row[4].split(":")[1], 16) > 0
        for row in rows
    )


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
def waiting_on_paused(server: RedisProcess, pid: int) -> Iterator[None]:
    """Pause ``server`` and return once process ``pid`` has sent it a request it has not read
    (a call waiting on the silent Redis); resume it when the block ends.

    A pause that lands after Redis read a request, before it answered, leaves that call
    waiting with nothing unread, for good: Redis then goes on until it has answered a PING of
    its own (so it answered that call too) and is paused again, until a request of ``pid`` lies
    unread (a reap loop on a loaded CI machine met it). Resumed for a moment only, Redis was
    paused again before the scheduler ran it, on a loaded 2-core machine: no call of ``pid``
    went on for 30 s.
    """
    deadline = time.monotonic() + CALL_WAIT_S
    with redis.Redis.from_url(server.url, socket_timeout=CALL_WAIT_S) as probe:
        while True:
            with paused(server):
                if holds_within(lambda: request_unread_from(pid, server.port), PAUSE_TRY_S):
                    yield
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"no call waited on the paused Redis within {CALL_WAIT_S}s")
            probe.ping()  # Redis went on: what it had read before the pause is answered
