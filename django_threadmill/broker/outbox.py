"""Which outboxes this process filled, so its workflow drainer visits them at once."""

import threading

from ..forks import ForkSafeLock


class OutboxSignal:
    """The queue parts whose outbox this process filled, for its drainer to visit at once."""

    def __init__(self) -> None:
        self._parts: set[str] = set()
        self._lock = ForkSafeLock()  # a child's first finish that fills an outbox takes it
        self.filled = threading.Event()

    def note(self, part: str) -> None:
        with self._lock:
            self._parts.add(part)
            self.filled.set()

    def pending(self) -> bool:
        """Tell whether parts were noted since the last take."""
        return bool(self._parts)

    def take(self) -> set[str]:
        """Return the parts noted since the last take, and forget them."""
        with self._lock:
            parts, self._parts = self._parts, set()
            self.filled.clear()
        return parts
