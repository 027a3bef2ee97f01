"""Say once that a call fails beside others that go on, and once that it works again.

A Redis Cluster primary down with no replica to take over fails the calls of its queues for as
long as it is away, hours maybe, while the other primaries serve theirs. Each retry logged a
WARNING, every few seconds: the prefetcher's fetch from such a queue, the lease keeper's renewal
in it (its heartbeat there, with no lease held), the workflow drainer's look at the outboxes.
Now a call's first failure is a WARNING, each retry after it a DEBUG line (``-v 2``) unless it
``matters`` each time (a lease held there may lapse), and its first answer an INFO saying how
long it failed.
"""

import logging
import time
from collections.abc import Callable, Collection

RETRIES_SAID = " (its retries are logged at -v 2, its recovery at INFO)"


class FailingCalls:
    """The calls that fail, each by what it names (a queue, the outboxes), with when it began
    to; one thread's, logged with that thread's logger."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._clock = clock  # monotonic seconds
        self._since: dict[str, float] = {}  # name -> when its calls began to fail

    def failed(
        self, names: Collection[str], message: str, *args: object, matters: bool = False
    ) -> None:
        """Log ``message % args``, the failure of the calls of ``names``: at WARNING if one of
        them begins to fail, or if the failure ``matters`` each time; at DEBUG otherwise."""
        began = [name for name in names if name not in self._since]
        for name in began:
            self._since[name] = self._clock()
        if matters:
            self._logger.warning(message, *args)
        elif began:
            self._logger.warning(message + RETRIES_SAID, *args)
        else:
            self._logger.debug(message, *args)

    def answered(self, name: str, message: str, *args: object) -> None:
        """Log ``message % args`` at INFO, with how long it failed, if ``name``'s call was
        failing: it got an answer."""
        since = self._since.pop(name, None)
        if since is not None:
            self._logger.info(message + " failed_for_s=%.1f", *args, self._clock() - since)

    def failing(self) -> frozenset[str]:
        """Return the names whose calls fail, as last said."""
        return frozenset(self._since)
