"""How long one task may hold the event loop before the worker says so, and gives up on it.

A blocking call inside an ``async def`` task holds every async task of the process, its own
--task-timeout included: that deadline is a timer on the loop it holds. Past --task-timeout
(and ``HELD_MARGIN_S``) the process recycles: a fresh one serves the queues, and this one's
loop gets --grace-period. Without --task-timeout nothing ends the call; past ``lease_ttl`` the
monitor says so (docs/worker.md, What blocks the loop).
"""

import logging
from collections.abc import Callable

from ..broker import Reservation

logger = logging.getLogger(__name__)

# How long past --task-timeout a held loop is given up on, in seconds: as late as the watchdog
# may time a thread out (it looks at most every second), so both lanes give a task that slack.
HELD_MARGIN_S = 1.0


class LoopHoldLimit:
    """The longest one task may hold the loop, and what is done past it."""

    def __init__(self, task_timeout_s: float | None, lease_ttl_s: float) -> None:
        self.task_timeout_s = task_timeout_s
        self.lease_ttl_s = lease_ttl_s
        self.limit_s = lease_ttl_s if task_timeout_s is None else task_timeout_s + HELD_MARGIN_S
        # The process's: recycle, its loop given --grace-period. Called with --task-timeout only.
        self.on_held: Callable[[], None] = lambda: None

    def passed(self, culprit: Reservation | None, held_s: float) -> None:
        """Say that ``culprit`` has held the loop ``held_s``, past the limit; with
        --task-timeout, give the loop up (called once per stall, from the loop monitor)."""
        task_id, path = task_named(culprit)
        if self.task_timeout_s is None:
            logger.error(
                "Event loop held past lease_ttl task_id=%s path=%s for_ms=%d lease_ttl_s=%s: a "
                "blocking call inside an async task holds every async task of the process for "
                "as long as it takes; set --task-timeout to have the worker replace such a "
                "process (docs/worker.md, What blocks the loop)",
                task_id,
                path,
                held_s * 1000,
                self.lease_ttl_s,
            )
            return
        logger.error(
            "Event loop held past --task-timeout task_id=%s path=%s for_ms=%d timeout_s=%s, "
            "recycling: a blocking call inside an async task holds every async task of the "
            "process, and their timeouts; a fresh process serves the queues, and this one ends "
            "once the call returns or --grace-period passes (docs/worker.md, What blocks the loop)",
            task_id,
            path,
            held_s * 1000,
            self.task_timeout_s,
        )
        self.on_held()


def task_named(culprit: Reservation | None) -> tuple[str, str]:
    """Return the id and the path of the task that held the loop, "unknown" if none was seen."""
    if culprit is None:
        return "unknown", "unknown"
    return culprit.lease.task_id, culprit.lease.task_path
