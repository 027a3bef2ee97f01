"""Queues a limit held back, so the prefetcher neither spins on them nor slows other queues."""

import time

LIMIT_RECHECK_S = 0.1  # a busy prefetcher looks at a queue whose concurrency is full this often


class HeldBackQueues:
    """When the prefetcher may look at each held-back queue again (prefetcher thread only).

    A rate limit says when its next token comes; a full concurrency limit does not, so an idle
    prefetcher waits for the wake token a finish pushes, and a busy one looks again now and then.
    """

    def __init__(self) -> None:
        self._until: dict[str, tuple[float, bool]] = {}  # queue -> (monotonic s, timed)

    def hold(self, queue: str, next_due_ms: int | None) -> None:
        delay_s = LIMIT_RECHECK_S if next_due_ms is None else next_due_ms / 1000
        self._until[queue] = (time.monotonic() + delay_s, next_due_ms is not None)

    def is_held(self, queue: str) -> bool:
        held = self._until.get(queue)
        if held is None or held[0] <= time.monotonic():
            self._until.pop(queue, None)
            return False
        return True

    def next_due_ms(self) -> int | None:
        """Return ms until the first timed hold ends: an idle wait must not outlast it."""
        ends = [until for until, timed in self._until.values() if timed]
        return None if not ends else max(0, round((min(ends) - time.monotonic()) * 1000))

    def waiting_for_a_slot(self) -> list[str]:
        """Return the queues whose full concurrency limit holds their ready tasks back: not
        empty, and their holders' finishes free slots (--burst must not stop on them)."""
        return [queue for queue, (_, timed) in self._until.items() if not timed]

    def clear(self) -> None:
        """Forget every hold: a wake token may mean a slot was freed."""
        self._until.clear()
