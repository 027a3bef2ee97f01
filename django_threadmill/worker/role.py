"""The base of every thread in a worker process: named by role, and fatal when its loop fails."""

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class RoleThread(threading.Thread):
    """A non-daemon thread with one role (prefetcher, ack writer, worker, ...).

    Task errors never reach here (the executor records them). If the role's own loop fails, the
    thread logs CRITICAL with its name and traceback and calls ``on_crash``, which stops the
    process so the supervisor starts a fresh one, instead of leaving it up but idle.
    """

    def __init__(self, name: str, on_crash: Callable[[], None]) -> None:
        super().__init__(name=name)
        self.on_crash = on_crash
        self.stopping = threading.Event()  # a loop that waits between rounds waits on this

    def run(self) -> None:
        try:
            self.loop()
        except BaseException:
            try:
                logger.critical("Thread died name=%s", self.name, exc_info=True)
            finally:  # a log line that cannot be written must not leave the process up, idle
                self.on_crash()

    def loop(self) -> None:
        """Do the role's work until told to stop."""
        raise NotImplementedError

    def stop(self) -> None:
        """Ask the loop to end: set ``stopping``, then wake the thread wherever it waits.

        Whoever started the thread calls this, then joins it (worker/shutdown.py).
        """
        self.stopping.set()
        self.wake()

    def wake(self) -> None:
        """Wake the thread from a wait that does not watch ``stopping`` (none by default)."""
