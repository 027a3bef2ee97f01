"""Outbox entries whose advance raised something unexpected, held back from drains a while.

Such an entry (a bug, or damage nobody foresaw; not Redis being away) stays in its outbox, so
nothing is lost, and the drain goes on with the entries after it. Stopping instead would stop
the worker process, and since a drainer drains at start, every process after it. Held here, an
entry is tried again once ``RETRY_AFTER_S`` has passed, so its error is logged about once a
minute, not on every drain (docs/workflows.md, An entry that cannot be advanced). Holds that
ended are forgotten as more entries fail, so a worker's drainer keeps about twice the entries
that failed in the last ``RETRY_AFTER_S`` at most (docs/worker.md, Memory a process keeps).
"""

import time
from collections.abc import Callable

RETRY_AFTER_S = 60.0
# Holds kept before the ended ones are first looked for; from then on, twice those left.
FORGET_ENDED_AT = 1000


class FailedEntries:
    """When each entry that failed to advance may be tried again; one drainer's own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._retry_at: dict[str, float] = {}
        self._forget_ended_at = FORGET_ENDED_AT  # holds kept before the ended ones are dropped

    def held(self, task_id: str) -> bool:
        """Tell whether ``task_id`` failed less than ``RETRY_AFTER_S`` ago."""
        retry_at = self._retry_at.get(task_id)
        return retry_at is not None and self.clock() < retry_at

    def failed(self, task_id: str) -> None:
        """Hold ``task_id`` back for ``RETRY_AFTER_S`` from now."""
        now = self.clock()
        self._retry_at[task_id] = now + RETRY_AFTER_S
        if len(self._retry_at) >= self._forget_ended_at:
            self._forget_ended(now)

    def _forget_ended(self, now: float) -> None:
        """Drop the holds that ended: an entry that another drainer advanced, or a purge took,
        never comes back here to be forgotten, and a worker's drainer lives as long as its
        process. Done once the holds doubled, so each failure costs O(1) on average."""
        self._retry_at = {task_id: at for task_id, at in self._retry_at.items() if at > now}
        self._forget_ended_at = max(FORGET_ENDED_AT, 2 * len(self._retry_at))

    def advanced(self, task_id: str) -> None:
        """Forget ``task_id``: its workflow advanced, and its entry leaves the outbox."""
        self._retry_at.pop(task_id, None)
