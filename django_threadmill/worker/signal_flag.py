"""A flag a signal handler sets: the stop of a worker process or of the reaper loop.

Python runs a handler in the main thread, between two of its bytecodes, wherever that thread
is. A ``threading.Event`` set there takes the lock the main thread may hold at that moment, in
the same Event's ``wait`` or ``set``: the lock is not reentrant, and the thread waits for itself
for good (docs/worker.md, Signals reach the main thread). A flag is written and read without a
lock; a thread that must wake on it sleeps on the wake-up pipe, which the signal writes to.
"""


class SignalFlag:
    """A stop asked for, safe to set from a signal handler and to read from any thread."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set
