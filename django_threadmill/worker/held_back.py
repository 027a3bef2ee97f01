"""Queues a limit held back, so the prefetcher neither spins on them nor slows other queues."""

import time
from enum import Enum

LIMIT_RECHECK_S = 0.1  # a busy prefetcher looks at a queue whose concurrency is full this often


class Hold(Enum):
    """Why a queue is not asked for a while."""

    SLOT = "slot"  # its concurrency limit is full: a finish frees a slot (pushing a wake token)
    START = "start"  # its rate holds its ready tasks: the next start comes at the due time
    RECHECK = "recheck"  # its call failed: asked again later


class HeldBackQueues:
    """When the prefetcher may look at each held-back queue again (prefetcher thread only).

    A rate limit says when its next token comes; a full concurrency limit does not, so an idle
    prefetcher waits for the wake token a finish pushes, and a busy one looks again now and then.
    """

    def __init__(self) -> None:
        self._until: dict[str, tuple[float, Hold]] = {}  # queue -> (monotonic s, why)

    def hold(self, queue: str, next_due_ms: int | None, why: Hold) -> None:
        """Skip ``queue`` for ``next_due_ms``, or LIMIT_RECHECK_S when None (a full slot,
        which has no due time: a finish's wake token ends it)."""
        delay_s = LIMIT_RECHECK_S if next_due_ms is None else next_due_ms / 1000
        self._until[queue] = (time.monotonic() + delay_s, why)

    def is_held(self, queue: str) -> bool:
        held = self._until.get(queue)
        if held is None or held[0] <= time.monotonic():
            self._until.pop(queue, None)
            return False
        return True

    def next_due_ms(self, why: Hold) -> int | None:
        """Return ms until the first hold for ``why`` ends (a START or RECHECK: a SLOT has no
        due time): an idle wait must not outlast it."""
        ends = [until for until, held in self._until.values() if held is why]
        return None if not ends else max(0, round((min(ends) - time.monotonic()) * 1000))

    def held_for(self, why: Hold) -> list[str]:
        """Return the queues held for ``why``. A limit holds ready tasks back, so --burst must
        not stop on them: a rate's next start comes, a holder's finish frees a slot."""
        return [queue for queue, (_, held) in self._until.items() if held is why]

    def clear(self) -> None:
        """Forget every hold: a wake token may mean a slot was freed."""
        self._until.clear()


class BoundedWaits:
    """--burst: since when it has waited on the queues held for a reason whose wait is bounded
    (a full concurrency limit's slot, a failing queue's recovery), on the monotonic clock."""

    def __init__(self) -> None:
        self._since: dict[Hold, float] = {}

    def began(self, why: Hold) -> bool:
        """Tell whether a wait on queues held for ``why`` is under way."""
        return why in self._since

    def waits(self, why: Hold, held: list[str], bound_ms: int) -> bool:
        """Tell whether the burst still waits on ``held``, the queues held for ``why``: from
        the first look that found some until ``bound_ms`` later. None held ends the wait."""
        if not held:
            self.forget(why)
            return False
        now = time.monotonic()
        since = self._since.setdefault(why, now)
        return (now - since) * 1000 <= bound_ms

    def forget(self, why: Hold) -> None:
        """End the wait for ``why``: what it waited on came (a slot, tasks fetched)."""
        self._since.pop(why, None)
