"""The attempts this process runs now of tasks that take the context, by task id.

A worker holds each start notice for 20 ms (docs/design.md, Worker), so for that long the record
of a task it has started still says reserved, which reads READY elsewhere. This process reads
such a record through the attempt it runs under the record's reservation, as it is: RUNNING,
its attempt counted, for a task that refreshes its own result as it starts
(``context.task_result.refresh()``). progress/channels.py opens and closes the entries.
"""

from typing import Protocol

from ..compat import TaskResult


class RunningAttempt(Protocol):
    """An attempt this process runs: its TaskResult, and the token of its reservation."""

    @property
    def result(self) -> TaskResult: ...

    @property
    def token(self) -> str: ...


running_here: dict[str, RunningAttempt] = {}  # task id -> attempt; a lookup takes no lock


def as_started_here(stored: TaskResult, token: str | None) -> TaskResult:
    """Return ``stored``, read from a reserved record under the reservation ``token``, as the
    attempt this process runs under that reservation shows it, if there is one."""
    running = running_here.get(stored.id)
    if running is None or running.token != token:
        return stored
    attempt = running.result
    object.__setattr__(stored, "status", attempt.status)
    object.__setattr__(stored, "started_at", attempt.started_at)
    object.__setattr__(stored, "last_attempted_at", attempt.last_attempted_at)
    object.__setattr__(stored, "worker_ids", list(attempt.worker_ids))
    return stored
