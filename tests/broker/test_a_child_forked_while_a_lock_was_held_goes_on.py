"""A child forked while a thread of its parent held a lock of ours goes on: the lock is taken
afresh in the child (forks.py). The thread that held it does not come along, and the child
waited for ever at its first call to a Redis Cluster with a node remembered as away
(``DownNodes``), or at its first finish that filled a workflow outbox (``OutboxSignal``): a task
that forks (multiprocessing) while the worker's other threads call Redis. An ``aenqueue`` on a
loop of the child (``PerLoop``) was mended so before.
"""

import asyncio
import os
import signal
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker.down_nodes import DownNodes
from django_threadmill.broker.outbox import OutboxSignal
from django_threadmill.broker.per_loop import PerLoop
from django_threadmill.forks import ForkSafeLock
from tests.support import holds_within

CHILD_DEADLINE_S = 20.0  # the child makes one call, in memory


def away_node() -> tuple[ForkSafeLock, Callable[[], object]]:
    nodes = DownNodes()
    nodes.failed("10.0.0.7:6379", redis.ConnectionError("Error 111 connecting"))
    return nodes._lock, lambda: nodes.spares_any(["10.0.0.7:6379"])


def filled_outbox() -> tuple[ForkSafeLock, Callable[[], object]]:
    outbox = OutboxSignal()
    return outbox._lock, lambda: outbox.note("{emails:0}")


def loop_value() -> tuple[ForkSafeLock, Callable[[], object]]:
    values = PerLoop(object)

    async def value() -> object:
        return values.get()

    return values._lock, lambda: asyncio.run(value())


def exit_code_within(pid: int, deadline_s: float) -> int | None:
    """Return the child's exit code, or None (the child killed) if it runs past the deadline."""
    codes: list[int] = []

    def reaped() -> bool:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            codes.append(os.waitstatus_to_exitcode(status))
        return bool(done)

    if holds_within(reaped, deadline_s):
        return codes[0]
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.parametrize(
    "held", [away_node, filled_outbox, loop_value], ids=["DownNodes", "OutboxSignal", "PerLoop"]
)
def test_the_child_takes_the_lock_afresh(
    held: Callable[[], tuple[ForkSafeLock, Callable[[], object]]],
) -> None:
    lock, call = held()
    with lock:  # held by a thread of the parent as it forks
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                call()
                code = 0
            finally:
                os._exit(code)

    assert exit_code_within(pid, CHILD_DEADLINE_S) == 0, "the child waited for the lock"
