"""A count of characters held in memory, kept by any thread and read by one.

The ack writer's backlog and the buffer's read-ahead both bound the bytes they hold, not only
the number of items (docs/worker.md, Memory a process keeps). Each change is appended to a
deque (atomic, no lock, wakes nobody: it happens once or twice per task) and the one reader, the
prefetcher, sums them as it looks.
"""

from collections import deque


class HeldChars:
    """Characters added (+) and let go (-) by any thread; ``total`` by one reader only."""

    def __init__(self) -> None:
        self._changes: deque[int] = deque()
        self._total = 0  # the sum of the changes read so far; only ``total`` changes it

    def add(self, chars: int) -> None:
        """Count ``chars`` more (fewer, if negative)."""
        self._changes.append(chars)

    def total(self) -> int:
        """Return the characters held: every change added before this call is counted."""
        while self._changes:
            self._total += self._changes.popleft()
        return self._total
