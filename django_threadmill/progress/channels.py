"""Where the reports of a running attempt go: the attempts this process runs now, by task id.

A worker (or ``drain``) opens a channel around the call of each task that takes the context;
``report_progress`` finds it from the context and hands the report to the channel's sink, the
process's pending reports (worker/progress.py). Looked up by task id rather than held in a
contextvar, so a report from a thread the task started itself arrives too; the TaskResult must
be the attempt's own, so a thread abandoned past ``--task-timeout`` cannot report as the attempt
that followed it, and ``close_channel`` shuts the attempt's channel the moment the watchdog
abandons its thread.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, cast

from ..broker import Lease, ProgressReport
from ..codec.attempts_here import running_here
from ..compat import TaskResult


class ProgressSink(Protocol):
    """Takes reports as they come; sends each attempt's latest later, never one call each."""

    def put(self, report: ProgressReport) -> None: ...


@dataclass(frozen=True, slots=True)
class Channel:
    """The running attempt whose context carries ``result``, and where its reports go."""

    result: TaskResult
    lease: Lease
    sink: ProgressSink

    @property
    def token(self) -> str:
        """The token of the attempt's reservation: a record reserved under it is this one's."""
        return self.lease.token


# Task id -> channel; a lookup takes no lock (atomic). get_result reads it too (attempts_here).
_open = cast(dict[str, Channel], running_here)
_lock = threading.Lock()  # only opening and closing, against each other


@contextmanager
def open_channel(result: TaskResult, lease: Lease, sink: ProgressSink) -> Iterator[None]:
    """Send the reports of the attempt ``result`` stands for to ``sink`` while the block runs."""
    channel = Channel(result, lease, sink)
    with _lock:
        _open[result.id] = channel
    try:
        yield
    finally:
        with _lock:
            if _open.get(result.id) is channel:
                del _open[result.id]


def close_channel(lease: Lease) -> None:
    """Stop taking the reports of the attempt ``lease`` stands for, whose thread runs on: the
    watchdog recorded it timed out, and what it reports now is past its end (docs/lifecycle.md,
    Progress)."""
    with _lock:
        channel = _open.get(lease.task_id)
        if channel is not None and channel.lease == lease:
            del _open[lease.task_id]


def channel_of(result: TaskResult) -> Channel | None:
    """Return the open channel of the attempt ``result`` stands for, or None (not running in
    this process, or run by another backend)."""
    channel = _open.get(result.id)
    return channel if channel is not None and channel.result is result else None
