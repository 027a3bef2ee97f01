"""Pausing: stop the workers taking a queue's tasks, and let them take them again.

A queue is paused while its ``P:paused`` key exists, in every part of a sharded queue;
acquire.lua checks it in the call that would reserve, so every worker obeys at once, pace.lua
before a rate-limited queue's start turn, so a task reserved before the pause and still waiting
for its turn goes back to READY, and a worker or Redis restart keeps it (docs/lifecycle.md,
Pausing a queue). Pause and resume also reach the parts of every other shard count the queue
kept keys under, so the workers still serving an earlier ``queue_shards`` obey them
(docs/scaling.md, Changing the shard count). The key holds who paused the queue, when and why,
for the admin and the command; nothing decides on its value.
"""

import json
import logging
from dataclasses import dataclass
from typing import Any

import redis

from ..codec.text import utf8_text
from ..conf.settings import check_queue_name
from ..exceptions import BrokerUnavailable, ResumedNotWoken
from .connection import wrong_type
from .enqueue import WAKE_TOKEN_CAP
from .keys import QueueKeys
from .layouts import Layouts
from .raw_replies import controls_escaped
from .types import stored_note

logger = logging.getLogger(__name__)
# A pause's reason: one line on the admin's queues page and in the log line that records it.
MAX_REASON_CHARS = 200


def checked_reason(reason: str, what: str) -> str:
    """Return ``reason`` if it is one line of at most MAX_REASON_CHARS characters; else raise
    ValueError naming ``what`` (the option or field it came from) and the fix.

    The command and the admin both check with this: a line break (``\\n``, U+2028, ...) would
    split the log line that records the pause, or forge a second one, and the queues page
    shows the reason on one line.
    """
    lines = reason.splitlines()
    if reason != " ".join(lines):
        problem = f"{len(lines)} lines" if len(lines) > 1 else "a line and a line break"
    elif len(reason) > MAX_REASON_CHARS:
        problem = f"{len(reason)} characters"
    else:
        return reason
    raise ValueError(
        f"{what} is {problem}: give one line of at most {MAX_REASON_CHARS} characters (the "
        "rest belongs in a ticket or runbook)."
    )


def _checked_call(call: str, queue: object, by: object, reason: object = "") -> tuple[str, str]:
    """Return the author and the reason of ``call`` (pause or resume) as text; refuse a
    ``queue``, author or reason it cannot take, before it writes anything: a ``None`` one failed
    in the log line once the queue was paused or resumed (a resume left its idle workers
    unwoken), and a pause key written with it read back as its raw JSON. A reason is checked
    as the command and the admin check theirs."""
    check_queue_name(queue)
    author = utf8_text(by, f"{call}() by")
    return author, checked_reason(utf8_text(reason, f"{call}() reason"), f"{call}() reason")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuePause:
    """Who paused a queue, when and why, as its ``P:paused`` key holds it."""

    at_ms: int | None  # Redis time; None if the key was not written by ``pause``
    by: str  # who, e.g. "ada in the admin"
    reason: str  # why, as they said it ("" if they did not)

    def text(self) -> str:
        """Return what the key holds: a JSON object of the three fields.

        Earlier versions wrote ``"<ms> <by>: <reason>"``, read back split at the first ": ": an
        author holding one (a username, ``$LOGNAME``) read back cut there, the rest of it taken
        for the reason.
        """
        fields = {"at_ms": self.at_ms, "by": self.by, "reason": self.reason}
        return json.dumps(fields, ensure_ascii=False)

    @classmethod
    def parse(cls, text: str) -> "QueuePause":
        """Read a key's value as ``text`` writes it, or as earlier versions wrote it (``"<ms>
        <by>: <reason>"``), forgiving anything else: a key set by hand still pauses."""
        try:
            fields = json.loads(text)
        except (ValueError, RecursionError):  # not JSON: an earlier version's, or by hand
            fields = None
        match fields:
            case {"at_ms": int() | None as at_ms, "by": str() as by, "reason": str() as reason}:
                return cls(at_ms=at_ms, by=by, reason=reason)
        at_ms, by, reason = stored_note(text)
        return cls(at_ms=at_ms, by=by, reason=reason)


class Pausing(Layouts):
    """The pause and resume section of the Broker."""

    def pause(self, queue: str, by: str, reason: str = "") -> bool:
        """Pause every part of ``queue``, of every shard count; return False if it was paused
        already.

        A pause in force is kept as it was, with its own time, author and reason.
        """
        by, reason = _checked_call("pause", queue, by, reason)
        note = QueuePause(at_ms=self.server_time_ms(), by=by, reason=reason).text()
        parts = self.every_part(queue)
        with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
            for part in parts:
                pipe.set(self.queue_keys(part).paused, note, nx=True)
            paused = any(pipe.execute())
        if paused:
            logger.info(
                "Queue paused backend=%s queue=%s by=%s reason=%s",
                self.settings.alias,
                queue,
                controls_escaped(by),
                controls_escaped(reason),
            )
        return paused

    def resume(self, queue: str, by: str) -> bool:
        """Resume every part of ``queue``, of every shard count, and wake idle workers; False
        if it was not paused.

        Each part that was paused gets a wake token per READY task, up to the cap enqueue keeps,
        and at least one: delayed tasks that came due meanwhile are promoted by the first
        acquire, which passes the baton if more is left (docs/design.md, Idle workers block,
        they do not poll). The resume is logged once the pause keys are gone, before the
        wake-up: a part whose ``ready`` or ``wake`` key holds another type gets no tokens, and
        a Redis at ``maxmemory`` refuses them all (it serves the ``DEL``, which frees memory),
        yet the queue is resumed; ``ResumedNotWoken`` says so (docs/lifecycle.md, Keys of
        another type).
        """
        by, _ = _checked_call("resume", queue, by)
        parts = self.every_part(queue)
        with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
            for part in parts:
                keys = self.queue_keys(part)
                pipe.delete(keys.paused)
                pipe.zcard(keys.ready)
                pipe.llen(keys.wake)
            replies = pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, redis.ResponseError) and not wrong_type(reply):
                    raise reply
        lifted = [
            (self.queue_keys(part), *replies[3 * index + 1 : 3 * index + 3])
            for index, part in enumerate(parts)
            if replies[3 * index]
        ]
        if not lifted:
            return False
        logger.info(
            "Queue resumed backend=%s queue=%s by=%s",
            self.settings.alias,
            queue,
            controls_escaped(by),
        )
        self._wake(queue, lifted)
        return True

    def _wake(self, queue: str, lifted: list[tuple[QueueKeys, Any, Any]]) -> None:
        """Push the wake tokens of each part whose pause was lifted (its keys, and the replies
        of its ``ready`` count and ``wake`` length); raise ``ResumedNotWoken`` if a part's key
        held another type, or Redis failed the push."""
        refused: list[tuple[str, str]] = []
        with self.client.pipeline(transaction=False) as pipe:
            for keys, ready, waiting in lifted:
                read = ((keys.ready, "zset", ready), (keys.wake, "list", waiting))
                wrong = [(key, kind) for key, kind, reply in read if wrong_type(reply)]
                refused += wrong
                tokens = 0 if wrong else min(WAKE_TOKEN_CAP - waiting, max(1, ready))
                if tokens > 0:
                    pipe.rpush(keys.wake, *[1] * tokens)
            try:
                with self.translated_errors():
                    pipe.execute()
            except BrokerUnavailable as exc:
                raise ResumedNotWoken(
                    f"Resumed queue {queue} of backend {self.settings.alias}, but the call "
                    f"waking its idle workers failed: {exc} The queue stays resumed; idle "
                    "workers look at it again within 5 s, once Redis answers."
                ) from exc
        if refused:
            raise self._not_woken(queue, refused)

    def _not_woken(self, queue: str, refused: list[tuple[str, str]]) -> ResumedNotWoken:
        """Return the error of a resume whose wake-up the keys ``refused`` (each with the type
        it should hold) held another type."""
        with self.translated_errors():
            types = [str(self.client.type(key)) for key, _ in refused]
        held = "; ".join(
            f"key {key} holds a {found}, not a {kind}"
            for (key, kind), found in zip(refused, types, strict=True)
        )
        return ResumedNotWoken(
            f"Resumed queue {queue} of backend {self.settings.alias}, but its idle workers "
            f"were not woken (WRONGTYPE): {held}. Something other than django-threadmill wrote "
            "to it: delete that key, or give each project its own OPTIONS['key_prefix']. The "
            "queue stays resumed; once the key is gone, idle workers look at it again within 5 s."
        )
