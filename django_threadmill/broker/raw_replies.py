"""Replies read as bytes and decoded field by field: acquire's, reap's, and the ids and
records the admin reads.

django-threadmill writes records in ASCII (JSON with ASCII escapes, ids, numbers), but a
record edited by hand may hold bytes that are not UTF-8. Decoded by the client, one such field
failed the whole reply: the batch it reserved was lost to the worker until its leases lapsed,
then came back at the head of the queue, again and again. Checking every payload in the script
cost Redis a third of acquire's work, so the reply comes back undecoded (``ScriptCall.raw``)
and is decoded here: a field that does not decode marks its one task, which is set aside
(set_aside.lua), and the others run (docs/lifecycle.md, Damaged records). Reap's reply is read
the same way: decoded as a whole, one expired attempt holding such bytes failed every reap
pass, and the other expired leases were never settled (set_aside_expired.lua).
"""

import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from redis.client import NEVER_DECODE

from ..codec.text import BIDI_CONTROLS, LINE_SEPARATORS, utf8_escapes

RAW = {NEVER_DECODE: True}  # a redis-py command option: its reply comes back as bytes
# What a Redis counter holds: HINCRBY takes a signed 64-bit integer, and nothing else.
COUNTER_RANGE = range(-(2**63), 2**63)
# C0, DEL, C1 (NEL, U+0085, among them), the line separators and the bidi controls:
# ``controls_escaped``.
CONTROLS = re.compile(rf"[\x00-\x1f\x7f-\x9f{LINE_SEPARATORS}{BIDI_CONTROLS}]")


class Undecodable(NamedTuple):
    """A task of acquire's reply with a field that is not UTF-8."""

    task_id: bytes  # as Redis sent it: set_aside.lua finds the record by these bytes
    reason: str  # "<field> not UTF-8", what P:damaged says


# A task's fields in acquire's reply, in order; then nerrors, then that many error texts.
FIELDS = ("id", "payload", "workers", "enqueued_ms", "started_ms", "workflow", "lapsed")
_HEAD = len(FIELDS) + 1  # a task's entry before its errors


def read_tasks[T](
    flat: list[Any], build: Callable[[str, str, str, str, str, str, bool, list[str]], T]
) -> tuple[list[T], list[Undecodable]]:
    """Read acquire.lua's flat task entries (``FIELDS``, ``nerrors``, then that many error
    texts, as bytes): ``build(task_id, payload, workers, enqueued_ms, started_ms, workflow,
    lapsed, errors)`` for each task that decodes, and the ones that do not."""
    built: list[T] = []
    undecodable: list[Undecodable] = []
    at = 0
    while at < len(flat):
        raw_id, payload, workers, enqueued_ms, started_ms, workflow, lapsed, nerrors = flat[
            at : at + _HEAD
        ]
        errors_end = at + _HEAD + int(nerrors)
        try:
            task = build(
                raw_id.decode(),
                payload.decode(),
                workers.decode() if workers else "",
                enqueued_ms.decode() if enqueued_ms else "",
                started_ms.decode() if started_ms else "",
                workflow.decode() if workflow else "",
                lapsed == b"1",
                [error.decode() for error in flat[at + _HEAD : errors_end]],
            )
        except UnicodeDecodeError:
            entry = flat[at:errors_end]
            errors = (f"error:{n}" for n in range(1, len(entry) - _HEAD + 1))
            field = _first_undecodable(zip([*FIELDS, "nerrors", *errors], entry, strict=True))
            undecodable.append(Undecodable(raw_id, f"{field} not UTF-8"))
        else:
            built.append(task)
        at = errors_end
    return built, undecodable


class UndecodableAttempt(NamedTuple):
    """An expired running attempt of reap's reply with a field that is not UTF-8."""

    task_id: bytes  # as Redis sent it: set_aside_expired.lua finds the record by these bytes
    token: bytes  # the attempt's lease token, which fences setting it aside
    reason: str  # "<field> not UTF-8", what P:damaged says


def read_expired[T](
    entries: list[Any], build: Callable[[str, str, str, str, str, list[str], str, list[str]], T]
) -> tuple[list[T], list[UndecodableAttempt]]:
    """Read reap.lua's expired running attempts, as bytes (id, token, payload, workers,
    deadline, error texts, workflow, then its enqueue, first start and last start times):
    ``build(...)`` with them decoded for each attempt that decodes, the times in one list, and
    the ones that do not. An absent field reads as "", and so does a time that is not UTF-8:
    times are for display and for retry policies, and one written by hand reads as none, as
    ``get_result`` reads it."""
    built: list[T] = []
    undecodable: list[UndecodableAttempt] = []
    for entry in entries:
        raw_id, token, payload, workers, deadline, errors, workflow, *times = entry
        try:
            attempt = build(
                raw_id.decode(),
                _text(token),
                _text(payload),
                _text(workers),
                _text(deadline),
                [_text(error) for error in errors],
                _text(workflow),
                [_text(time) if time and is_utf8(time) else "" for time in times],
            )
        except UnicodeDecodeError:
            field = _first_undecodable(
                [
                    ("id", raw_id),
                    ("token", token),
                    ("payload", payload),
                    ("workers", workers),
                    ("deadline", deadline),
                    *((f"error:{n}", error) for n, error in enumerate(errors, 1)),
                    ("workflow", workflow),
                ]
            )
            undecodable.append(UndecodableAttempt(raw_id, token or b"", f"{field} not UTF-8"))
        else:
            built.append(attempt)
    return built, undecodable


def _text(value: bytes | None) -> str:
    """Decode one field of a raw reply; an absent one (Lua's false) reads as ""."""
    return value.decode() if value else ""


def _first_undecodable(named: Iterable[tuple[str, Any]]) -> str:
    """Name the first of the (name, value) fields of one entry whose value is not UTF-8."""
    return next(name for name, value in named if isinstance(value, bytes) and not is_utf8(value))


def is_utf8(value: bytes) -> bool:
    """Tell whether ``value`` is UTF-8 text, as django-threadmill writes every value."""
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True


def escaped(value: bytes) -> str:
    """Decode one stored value, each byte that is not UTF-8 as its escape (``\\xff``).

    Such bytes come from something other than django-threadmill; decoded by the client, one
    failed the whole reply, and with it the page (docs/lifecycle.md, Damaged records).
    """
    return value.decode("utf-8", "backslashreplace")


def unescaped(text: str) -> bytes:
    """Return the bytes ``escaped`` shows as ``text``: each ``\\xNN`` back to its byte."""
    return re.sub(rb"\\x([0-9a-f]{2})", lambda byte: bytes.fromhex(byte[1].decode()), text.encode())


def controls_escaped(text: str) -> str:
    """Return ``text`` with each control character (a line break, U+2028 and U+2029 included,
    a terminal's escape sequence, a bidi override) as the ``\\xNN`` escapes of its UTF-8
    bytes, which ``unescaped`` reads back: one written by hand in an id or a reason, printed as
    is, broke a listing's line or forged one, and a right-to-left override turned a page's words
    after it around."""
    return CONTROLS.sub(utf8_escapes, text)


def stored_counters(reply: dict[bytes, bytes]) -> dict[str, int]:
    """Read a hash of counters read as bytes (``P:stats``, the metric hashes): a field whose
    name or value is not UTF-8, or whose value is not a whole number HINCRBY could count to
    (one past a float's range failed the whole scrape), is skipped, so one field written by
    hand costs its own count and not the page (docs/observability.md)."""
    found = {}
    for name, value in reply.items():
        try:
            field, count = name.decode(), int(value.decode())
        except (UnicodeDecodeError, ValueError):
            continue
        if count in COUNTER_RANGE:
            found[field] = count
    return found


class NotUtf8Id(str):
    """An id read from an index or the damaged set that is not UTF-8, its bytes escaped
    (``\\xff``): it names no record of ours (every id is ASCII), so a reader shows it as it is
    and reads nothing for it (docs/lifecycle.md, Damaged records)."""

    __slots__ = ()


def stored_id(value: bytes) -> str:
    """Decode an id read as bytes: a ``NotUtf8Id`` when it is not UTF-8."""
    return value.decode() if is_utf8(value) else NotUtf8Id(escaped(value))


def stored_scored_ids(reply: list[tuple[bytes, float]]) -> list[tuple[str, float]]:
    """Return the ids of a raw ``WITHSCORES`` reply decoded (``stored_id``), with their scores."""
    return [(stored_id(member), score) for member, score in reply]
