"""Pausing: stop the workers taking a queue's tasks, and let them take them again.

A queue is paused while its ``P:paused`` key exists, in every part of a sharded queue;
acquire.lua checks it in the call that would reserve, so every worker obeys at once, and a
worker or Redis restart keeps it (docs/lifecycle.md, Pausing a queue). The key holds who paused
the queue, when and why, for the admin and the command; nothing decides on its value.
"""

import logging
from dataclasses import dataclass

from .enqueue import WAKE_TOKEN_CAP
from .reads import Reads
from .types import stored_note

logger = logging.getLogger(__name__)
# A pause's reason: one line on the admin's queues page and in the log line that records it.
MAX_REASON_CHARS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuePause:
    """Who paused a queue, when and why, as its ``P:paused`` key holds it."""

    at_ms: int | None  # Redis time; None if the key was not written by ``pause``
    by: str  # who, e.g. "ada in the admin"
    reason: str  # why, as they said it ("" if they did not)

    def text(self) -> str:
        """Return what the key holds: ``"<ms> <by>: <reason>"``."""
        return f"{self.at_ms} {self.by}: {self.reason}"

    @classmethod
    def parse(cls, text: str) -> "QueuePause":
        """Read a key's value, forgiving anything else: a key set by hand still pauses."""
        at_ms, by, reason = stored_note(text)
        return cls(at_ms=at_ms, by=by, reason=reason)


class Pausing(Reads):
    """The pause and resume section of the Broker."""

    def pause(self, queue: str, by: str, reason: str = "") -> bool:
        """Pause every part of ``queue``; return False if it was paused already.

        A pause in force is kept as it was, with its own time, author and reason.
        """
        note = QueuePause(at_ms=self.server_time_ms(), by=by, reason=reason).text()
        with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
            for part in self.parts(queue):
                pipe.set(self.queue_keys(part).paused, note, nx=True)
            paused = any(pipe.execute())
        if paused:
            logger.info(
                "Queue paused backend=%s queue=%s by=%s reason=%s",
                self.settings.alias,
                queue,
                by,
                reason,
            )
        return paused

    def resume(self, queue: str, by: str) -> bool:
        """Resume every part of ``queue`` and wake idle workers; False if it was not paused.

        Each part that was paused gets a wake token per READY task, up to the cap enqueue keeps,
        and at least one: delayed tasks that came due meanwhile are promoted by the first
        acquire, which passes the baton if more are left (docs/design.md, Idle workers block,
        they do not poll).
        """
        with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
            wakes = []
            for part in self.parts(queue):
                keys = self.queue_keys(part)
                pipe.delete(keys.paused)
                pipe.zcard(keys.ready)
                pipe.llen(keys.wake)
                wakes.append(keys.wake)
            replies = pipe.execute()
            resumed = False
            for index, wake in enumerate(wakes):
                deleted, ready, waiting = replies[3 * index : 3 * index + 3]
                tokens = min(WAKE_TOKEN_CAP - waiting, max(1, ready)) if deleted else 0
                if tokens > 0:
                    pipe.rpush(wake, *[1] * tokens)
                resumed = resumed or bool(deleted)
            pipe.execute()
        if resumed:
            logger.info("Queue resumed backend=%s queue=%s by=%s", self.settings.alias, queue, by)
        return resumed
