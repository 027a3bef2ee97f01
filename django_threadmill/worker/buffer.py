"""The bounded buffer between the prefetcher and the worker threads."""

import threading
from collections import deque

from ..broker import Reservation


class TaskBuffer:
    """Reserved tasks waiting for a worker thread, at most ``capacity`` of them.

    It also counts tasks taken but not yet done, so ``--burst`` knows when nothing is running.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # Refill only once half the buffer is free, so a busy process acquires in batches
        # (one call per capacity/2 tasks) rather than one task per freed slot.
        self.refill_at = max(1, capacity // 2)
        self._waiting: deque[Reservation] = deque()
        self._running = 0
        self._closed = False
        self._changed = threading.Condition()

    def free_slots(self, stop: threading.Event) -> int:
        """Block until half the buffer is free (or ``stop`` is set, or it closes); return room."""
        with self._changed:
            while self.capacity - len(self._waiting) < self.refill_at and not (
                stop.is_set() or self._closed
            ):
                self._changed.wait()
            return 0 if self._closed else self.capacity - len(self._waiting)

    def put_many(self, reservations: list[Reservation]) -> None:
        with self._changed:
            self._waiting.extend(reservations)
            self._changed.notify_all()

    def take(self) -> Reservation | None:
        """Return the next task, blocking; None once the buffer is closed and drained."""
        with self._changed:
            while not self._waiting and not self._closed:
                self._changed.wait()
            if not self._waiting:
                return None
            self._running += 1
            self._changed.notify_all()
            return self._waiting.popleft()

    def done(self) -> None:
        """Mark one taken task as finished."""
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def is_idle(self) -> bool:
        """Tell whether nothing waits and nothing runs."""
        with self._changed:
            return not self._waiting and self._running == 0

    def wake(self) -> None:
        """Wake a prefetcher waiting for room, so it can see its stop event."""
        with self._changed:
            self._changed.notify_all()

    def close(self) -> list[Reservation]:
        """Stop handing out tasks; return the ones never started, for release."""
        with self._changed:
            self._closed = True
            unstarted = list(self._waiting)
            self._waiting.clear()
            self._changed.notify_all()
            return unstarted
