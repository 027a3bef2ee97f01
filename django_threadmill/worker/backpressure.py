"""When the prefetcher reserves nothing more: too many outcomes wait to be written, or the
tasks waiting in the buffer hold too many characters (docs/worker.md, Durability window of the
ack writer)."""

import logging
import threading
from collections.abc import Callable

from .buffer import TaskBuffer

# Said under the prefetcher's logger name, which docs and log filters know it by.
logger = logging.getLogger("django_threadmill.worker.prefetcher")

# Outcomes (and start notices due) waiting to be written above which nothing more is reserved:
# a Redis that refuses or delays acks (replicas away under durability="replicated") would let
# the process run its whole backlog and hold every outcome in memory, lost in a crash. The
# bound is this, or twice the buffer, whichever is more. Start notices held back until due
# are left out (AckWriter.backlog): they are at most one per running task.
UNWRITTEN_CAP = 1000
# Characters of results and errors waiting to be written above which nothing more is reserved
# either: outcomes of up to max_result_bytes each, a thousand of them held gigabytes
# (docs/worker.md, Durability window of the ack writer). JSON as stored is ASCII, a byte each.
UNWRITTEN_CHARS_CAP = 64 * 2**20
# Characters of payloads and earlier errors of reserved tasks waiting in the buffer at or above
# which nothing more is reserved: read-ahead is counted in tasks, and 500 of max_payload_bytes
# held 500 MiB unstarted. A refill then adds at most ACQUIRE_CHARS over all the queues it asks
# (one task each at least), so a process holds under 64 MiB of them, and that one task more.
READAHEAD_CHARS_CAP = 48 * 2**20
UNWRITTEN_LOOK_S = 0.05  # how often a held-back prefetcher looks whether the acks caught up
# A hold that lasts this long is a WARNING: a short one is flow control (a process short of CPU
# for its ack writer, a burst of results), a long one means Redis refuses or delays acks.
UNWRITTEN_WARN_S = 5.0


class Backpressure:
    """The prefetcher's holds, each said as it begins (and the acks' as it lasts and ends)."""

    def __init__(
        self,
        buffer: TaskBuffer,
        unwritten: Callable[[], int],
        unwritten_chars: Callable[[], int],
        stopping: threading.Event,
        clock: Callable[[], float],
    ) -> None:
        self.buffer = buffer
        self.unwritten = unwritten  # what the ack writer has not written, less held starts
        self.unwritten_chars = unwritten_chars  # the characters of its results and errors
        self.stopping = stopping
        self.clock = clock
        self._acks_behind_since: float | None = None  # when the hold for acks began
        self._acks_behind_warned = False
        self._readahead_held = False  # the last look found the read-ahead's characters full

    def holds(self) -> bool:
        """Tell whether to reserve nothing now, having waited a moment if so."""
        return self._acks_behind() or self._readahead_full()

    def _readahead_full(self) -> bool:
        """Tell whether the tasks waiting hold too many characters to reserve more; wait a
        moment then (a worker thread's take makes room, without a wake-up). The hold is flow
        control, said at -v 2 as it begins."""
        waiting_chars = self.buffer.waiting_chars()
        full = waiting_chars >= READAHEAD_CHARS_CAP
        if full and not self._readahead_held:
            logger.debug(
                "Reserving nothing until tasks waiting are taken waiting=%d waiting_chars=%d",
                self.buffer.waiting(),
                waiting_chars,
            )
        self._readahead_held = full
        if full:
            self.stopping.wait(UNWRITTEN_LOOK_S)
        return full

    def _acks_behind(self) -> bool:
        """Tell whether too many outcomes wait to be written to reserve more; wait a moment
        then. The hold is said at INFO as it begins, at WARNING once it lasted
        UNWRITTEN_WARN_S, and at INFO as it ends."""
        unwritten, unwritten_chars = self.unwritten(), self.unwritten_chars()
        behind = (
            unwritten > max(UNWRITTEN_CAP, 2 * self.buffer.capacity)
            or unwritten_chars > UNWRITTEN_CHARS_CAP
        )
        if not behind:
            if self._acks_behind_since is not None:
                self._acks_behind_since = None
                logger.info("Acks written, reserving again")
            return False
        now = self.clock()
        if self._acks_behind_since is None:
            self._acks_behind_since, self._acks_behind_warned = now, False
            logger.info(
                "Reserving nothing until acks are written unwritten=%d unwritten_chars=%d",
                unwritten,
                unwritten_chars,
            )
        elif not self._acks_behind_warned and now - self._acks_behind_since >= UNWRITTEN_WARN_S:
            self._acks_behind_warned = True
            logger.warning(
                "Reserving nothing until acks are written, for %ds now, unwritten=%d "
                "unwritten_chars=%d (Redis refuses or delays them, or the process is short of "
                "CPU for its ack writer)",
                now - self._acks_behind_since,
                unwritten,
                unwritten_chars,
            )
        self.stopping.wait(UNWRITTEN_LOOK_S)
        return True
