"""The bounded buffer between the prefetcher and the worker threads."""

import queue
import threading

from ..broker import Reservation

_CLOSED = None  # sentinel: each taker that meets it puts it back for the next one


class TaskBuffer:
    """Reserved tasks waiting for a worker thread, at most ``capacity`` of them.

    Built so a task costs no lock round trip and wakes nobody: worker threads take
    from a C ``SimpleQueue``; the prefetcher is woken only when a take crosses the refill mark,
    once per refill rather than once per task. It also counts tasks put in but not yet done, so
    ``--burst`` knows when nothing waits or runs.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # Refill only once half the buffer is free, so a busy process acquires in batches
        # (one call per capacity/2 tasks) rather than one task per freed slot.
        self.refill_at = max(1, capacity // 2)
        self._full_above = capacity - self.refill_at  # the prefetcher waits while more wait
        self._waiting: queue.SimpleQueue[Reservation | None] = queue.SimpleQueue()
        self._room = threading.Event()  # set when the prefetcher may refill
        self._outstanding = 0  # put in and not yet done: waiting or running
        self._outstanding_lock = threading.Lock()
        self._closed = False

    def free_slots(self, stop: threading.Event) -> int:
        """Block until half the buffer is free (or ``stop`` is set, or it closes); return room."""
        while self._waiting.qsize() > self._full_above and not (stop.is_set() or self._closed):
            self._room.clear()
            if self._waiting.qsize() > self._full_above and not stop.is_set():
                self._room.wait()
        return 0 if self._closed else self.capacity - self._waiting.qsize()

    def put_many(self, reservations: list[Reservation]) -> None:
        with self._outstanding_lock:
            self._outstanding += len(reservations)
        for reservation in reservations:
            self._waiting.put(reservation)

    def take(self) -> Reservation | None:
        """Return the next task, blocking; None once the buffer is closed and drained."""
        reservation = self._waiting.get()
        if reservation is _CLOSED:
            self._waiting.put(_CLOSED)
            return None
        if not self._room.is_set() and self._waiting.qsize() <= self._full_above:
            self._room.set()
        return reservation

    def done(self) -> None:
        """Mark one taken task as finished."""
        with self._outstanding_lock:
            self._outstanding -= 1

    def is_idle(self) -> bool:
        """Tell whether nothing waits and nothing runs."""
        return self._outstanding == 0

    def wake(self) -> None:
        """Wake a prefetcher waiting for room, so it can see its stop event."""
        self._room.set()

    def close(self) -> list[Reservation]:
        """Stop handing out tasks; return the ones never started, for release."""
        self._closed = True
        unstarted: list[Reservation] = []
        while True:
            try:
                reservation = self._waiting.get_nowait()
            except queue.Empty:
                break
            if reservation is not _CLOSED:
                unstarted.append(reservation)
        with self._outstanding_lock:
            self._outstanding -= len(unstarted)
        self._waiting.put(_CLOSED)
        self._room.set()
        return unstarted
