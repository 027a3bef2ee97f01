"""The progress reports of one worker process not sent yet: each attempt's latest, coalesced.

Tasks report as often as they like (``report_progress``); only the latest report of each
attempt is kept, and the ack writer takes them at most every ``PROGRESS_SEND_S``: with a
finish call it makes anyway, else in a call of their own. A finishing attempt's report is
taken with its outcome whenever that comes, so the last report is written before the result
(docs/lifecycle.md, Progress).
"""

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from ..broker import Lease, ProgressReport

# Pending reports go out at most this often: a task reporting in a tight loop costs Redis
# about two small writes a second, and a crash loses at most this much of its progress.
PROGRESS_SEND_S = 0.5


class PendingProgress:
    """The latest unsent report of each attempt this process runs (a ``ProgressSink``).

    ``on_first`` is called when a report arrives while none waits (the ack writer rings its
    doorbell then); ``clock`` is monotonic seconds, injectable for tests.
    """

    def __init__(
        self,
        interval_s: float = PROGRESS_SEND_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.on_first: Callable[[], None] = lambda: None
        self._latest: dict[Lease, ProgressReport] = {}
        self._lock = threading.Lock()
        self._next_send = clock()  # the first report after a quiet spell goes out at once

    def put(self, report: ProgressReport) -> None:
        """Keep ``report`` in place of its attempt's earlier one (any thread)."""
        with self._lock:
            first = not self._latest
            self._latest[report.lease] = report
        if first:
            self.on_first()

    def wait_s(self) -> float | None:
        """Return how long until the waiting reports are due (0: now); None if none waits."""
        if not self._latest:
            return None
        return max(0.0, self._next_send - self.clock())

    def take(self, finishing: Iterable[Lease] = (), *, flush: bool = False) -> list[ProgressReport]:
        """Take every waiting report if they are due (or ``flush``), and start the next
        interval; else only the reports of the ``finishing`` attempts."""
        if not self._latest:  # the usual case, read without the lock: no task reports
            return []
        now = self.clock()
        with self._lock:
            if self._latest and (flush or now >= self._next_send):
                taken, self._latest = list(self._latest.values()), {}
                self._next_send = now + self.interval_s
                return taken
            return [
                report
                for lease in finishing
                if (report := self._latest.pop(lease, None)) is not None
            ]

    def put_back(self, reports: Sequence[ProgressReport], retry_in_s: float = 0.0) -> None:
        """Keep ``reports`` a send could not deliver, unless a newer one came meanwhile; none
        is due again sooner than ``retry_in_s`` from now (the sender's backoff), but a
        finishing attempt's still goes with its outcome."""
        with self._lock:
            for report in reports:
                self._latest.setdefault(report.lease, report)
            self._next_send = max(self._next_send, self.clock() + retry_in_s)
