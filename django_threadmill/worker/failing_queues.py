"""Say once that a queue's fetches fail beside others that go on, and once that they work again.

A Redis Cluster primary down with no replica to take over fails the calls of its queues for as
long as it is away, hours maybe, while the other primaries serve theirs. Each retry of such a
queue logged a WARNING, every few seconds; now its first failure is a WARNING, each retry after
it a DEBUG line (``-v 2``), and its first answer an INFO saying how long it failed.
"""

import logging
import time
from collections.abc import Callable

from ..exceptions import BrokerUnavailable

logger = logging.getLogger(__name__)


class FailingQueues:
    """The queues whose acquire call failed, with when it began to (prefetcher thread only)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock  # monotonic seconds
        self._since: dict[str, float] = {}  # queue -> when its calls began to fail

    def failed(self, queue: str, error: BrokerUnavailable, retry_in_s: float) -> None:
        """Note that ``queue``'s call failed with ``error``; it is asked again in
        ``retry_in_s``. Said at WARNING as the queue begins to fail, at DEBUG after."""
        first = queue not in self._since
        self._since.setdefault(queue, self._clock())
        logger.log(
            logging.WARNING if first else logging.DEBUG,
            "Fetch from a queue failed, the others go on queue=%s retry_in_s=%g error=%s%s",
            queue,
            retry_in_s,
            error,
            " (its retries are logged at -v 2, its recovery at INFO)" if first else "",
        )

    def answered(self, queue: str) -> None:
        """Note that ``queue``'s call got an answer: said at INFO if it was failing."""
        since = self._since.pop(queue, None)
        if since is not None:
            logger.info(
                "Fetch from a queue works again queue=%s failed_for_s=%.1f",
                queue,
                self._clock() - since,
            )
