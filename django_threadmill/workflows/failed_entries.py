"""Outbox entries whose advance raised something unexpected, held back from drains a while.

Such an entry (a bug, or damage nobody foresaw; not Redis being away) stays in its outbox, so
nothing is lost, and the drain goes on with the entries after it. Stopping instead would stop
the worker process, and since a drainer drains at start, every process after it. Held here, an
entry is tried again once ``RETRY_AFTER_S`` has passed, so its error is logged about once a
minute, not on every drain (docs/workflows.md, An entry that cannot be advanced).
"""

import time
from collections.abc import Callable

RETRY_AFTER_S = 60.0


class FailedEntries:
    """When each entry that failed to advance may be tried again; one drainer's own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._retry_at: dict[str, float] = {}

    def held(self, task_id: str) -> bool:
        """Tell whether ``task_id`` failed less than ``RETRY_AFTER_S`` ago."""
        retry_at = self._retry_at.get(task_id)
        return retry_at is not None and self.clock() < retry_at

    def failed(self, task_id: str) -> None:
        """Hold ``task_id`` back for ``RETRY_AFTER_S`` from now."""
        self._retry_at[task_id] = self.clock() + RETRY_AFTER_S

    def advanced(self, task_id: str) -> None:
        """Forget ``task_id``: its workflow advanced, and its entry leaves the outbox."""
        self._retry_at.pop(task_id, None)
