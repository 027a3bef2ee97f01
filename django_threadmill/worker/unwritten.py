"""The start notices and outcomes a write did not record, kept by the ack writer for their next
try while the others go on.

On a Redis Cluster a primary down fails the calls of its queues alone (broker/calls.py): its
items wait here, tried again with backoff, and every other start and outcome is written
meanwhile. Sent again as one batch, they stalled every later ack of the process, on every queue,
until the node came back (docs/worker.md, Durability window of the ack writer). On one Redis a
try that wrote nothing means Redis is away: what comes after waits here for the next try too,
one call per backoff and not one per task that ends.
"""

from collections.abc import Iterable

from ..broker import Finish, Lease, Start
from .backoff import ACK_BACKOFF


class Unwritten:
    """Items whose last write failed, and when to try them again (the ack writer's thread
    alone reads and changes them)."""

    def __init__(self) -> None:
        self.starts: list[Start] = []
        self.finishes: list[Finish] = []
        self.failures = 0  # tries in a row that left some unwritten
        self.due = 0.0  # on the monotonic clock: when they are tried again
        self._holds_up = False  # the last try wrote nothing, on one Redis

    def __len__(self) -> int:
        return len(self.starts) + len(self.finishes)

    def holds_up(self, now: float) -> bool:
        """Tell whether items that come now wait for the next try instead of going at once."""
        return self._holds_up and now < self.due

    def take(self, now: float, *, every: bool = False) -> tuple[list[Start], list[Finish]]:
        """Take the items kept if their try is due (or ``every``), to send with the new ones."""
        if not (every or now >= self.due):
            return [], []
        starts, finishes = self.starts, self.finishes
        self.starts, self.finishes = [], []
        return starts, finishes

    def add(self, starts: Iterable[Start], finishes: Iterable[Finish]) -> None:
        """Keep items that came while a try holds up the others, for that try."""
        self.starts += starts
        self.finishes += finishes

    def kept(
        self, starts: list[Start], finishes: list[Finish], now: float, *, holds_up: bool
    ) -> float:
        """Note the end of a try: keep the ``starts`` and ``finishes`` it did not write (with
        none and none kept from before, the next failure waits the least again); ``holds_up``:
        it wrote nothing, on one Redis. Return how long until they are tried again."""
        if not (starts or finishes):
            if not self:  # none waits for a later try
                self.failures, self._holds_up = 0, False
            return 0.0
        self.failures += 1
        retry_in_s = ACK_BACKOFF.after(self.failures)
        self.add(starts, finishes)
        self.due, self._holds_up = now + retry_in_s, holds_up
        return retry_in_s

    def drop_starts(self, finished: Iterable[Lease]) -> int:
        """Drop the kept start notices made moot by their outcome; return how many: an outcome
        is recorded from a reserved attempt too, and the notice would come after it."""
        if not self.starts:
            return 0
        leases = set(finished)
        kept = [start for start in self.starts if start.lease not in leases]
        dropped = len(self.starts) - len(kept)
        self.starts = kept
        return dropped
