"""An async generator a task left open is closed at shutdown, given a second, whatever its
``finally`` does (docs/worker.md, Two lanes).

A task that stops iterating an async generator (``break`` out of ``async for``) while something
still holds it (a client's cache of open streams) leaves it for the loop's last step, asyncio's
``shutdown_asyncgens``, which the lane ran with no bound and no guard. A ``finally`` there that
waited for good (for a consumer already cancelled, a peer that never answers) held the event
loop's thread past the stop, and one that raised ``SystemExit`` or stopped the loop ended that
thread ("Thread died"): either way a burst whose every task succeeded exited 5, its process
reported dead and replaced. Work left running had both guards already.

Every test runs the real ``threadmill_worker`` command in a subprocess; the tasks are at module
level so worker processes import them.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command

_open_streams: list[AsyncIterator[int]] = []  # what holds the generators, in the worker


async def _stream(closing: str, ends_by: str) -> AsyncIterator[int]:
    """Yield forever; on close, mark ``closing``, then end as ``ends_by`` says."""
    try:
        while True:
            yield 1
    finally:
        Path(closing).touch()
        await asyncio.sleep(0)
        if ends_by == "waiting for good":
            await asyncio.Event().wait()
        elif ends_by == "raising SystemExit":
            raise SystemExit(4)
        elif ends_by == "stopping the loop":
            asyncio.get_running_loop().stop()


@task
async def reads_the_first_item(closing: str, ends_by: str) -> int:
    """Read one item of a stream kept open for later, and return it."""
    stream = _stream(closing, ends_by)
    _open_streams.append(stream)
    async for first in stream:
        return first
    return 0


@pytest.mark.parametrize("ends_by", ["waiting for good", "raising SystemExit", "stopping the loop"])
def test_a_burst_ends_cleanly_however_a_left_open_generator_closes(
    backend: ThreadmillTaskBackend,
    start_worker: Callable[..., Command],
    tmp_path: Path,
    ends_by: str,
) -> None:
    closing = tmp_path / "closing"
    reading = reads_the_first_item.enqueue(str(closing), ends_by)

    worker = start_worker("--burst")
    assert worker.wait(60) == 0, worker.log

    assert closing.exists()  # its finally ran, at the loop's last step
    reading.refresh()
    assert reading.status == TaskResultStatus.SUCCESSFUL
    assert reading.return_value == 1
    assert "Thread died" not in worker.log
    assert "Threads still running after the grace period" not in worker.log
    if ends_by == "waiting for good":
        assert (
            "Async generators that tasks left open did not close within 1s at shutdown"
        ) in worker.log
