"""Turn stored values into what the admin shows: labels, datetimes, truncated JSON and text.

Nothing here marks anything safe: templates autoescape every value a task stored.
"""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse

from ..broker.inspect import DAMAGED
from ..broker.layouts import QueueNames
from ..codec.times import from_ms
from ..wording import listed_names

PREVIEW_CHARS = 2000  # characters of a value shown inline; "Show all" serves the rest as text
# The longest stored JSON "Show all" serves indented. json.dumps encodes with an indent in
# Python, a string per token, some 35 bytes of memory per character of JSON of small numbers
# (63 MB per view for 1.8 MB): past 256 KiB (about 9 MB) it serves the value as stored,
# and the task page says so (docs/admin.md, Task detail).
INDENT_CHARS = 256 * 1024
# The longest stored JSON the task page shows indented. Indenting costs some 35 bytes of memory
# per character of JSON of small numbers (63 MB for a result of 1.8 MB) to show its first
# PREVIEW_CHARS: past 64 KiB (about 2 MB of memory), the page shows the start as stored and
# "Show all" serves the whole value (docs/admin.md, Task detail).
PAGE_INDENT_CHARS = 64 * 1024

STATE_LABELS = {
    "ready": "READY",
    "reserved": "READY (reserved by a worker)",
    "running": "RUNNING",
    "successful": "SUCCESSFUL",
    "failed": "FAILED",
    DAMAGED: "DAMAGED (not a hash)",  # docs/lifecycle.md, Damaged records
}
NOT_UTF8_ID_LABEL = "DAMAGED (id not UTF-8)"  # an index names an id that is no text: no record


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """A value as the page shows it: its text, cut at ``PREVIEW_CHARS`` if longer."""

    text: str
    length: int
    truncated: bool
    from_end: bool = False  # the text is the value's end, not its start
    compact: bool = False  # JSON too long for the page to indent (PAGE_INDENT_CHARS)
    served_compact: bool = False  # too long for "Show all" to indent (INDENT_CHARS)


def shown(
    text: str, limit: int = PREVIEW_CHARS, *, compact: bool = False, served_compact: bool = False
) -> Shown:
    return Shown(
        text=text[:limit],
        length=len(text),
        truncated=len(text) > limit,
        compact=compact,
        served_compact=served_compact,
    )


def shown_end(text: str, limit: int = PREVIEW_CHARS) -> Shown:
    """Return ``text`` cut to its last ``limit`` characters: a traceback ends with the exception
    and its message, which the start of a long one would leave out."""
    cut = len(text) > limit
    return Shown(text=text[-limit:] if cut else text, length=len(text), truncated=cut, from_end=cut)


def byte_size(size: int) -> str:
    """Return a size in bytes as the pages write it: "4,194,306 bytes"."""
    return f"{size:,} bytes"


def pretty_json(raw: str | None) -> str:
    """Return stored JSON indented for reading, or the raw text if it is not JSON or is longer
    than INDENT_CHARS."""
    if raw is None:
        return ""
    if len(raw) > INDENT_CHARS:
        return raw
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):  # nested too deep (by hand) to read or to indent
        return raw


def pretty_value(value: Any, *, indent: bool = True) -> str:
    """Return ``value`` as JSON, indented unless ``indent`` is False (a value too long to) or
    it is nested too deep to: json indents in Python, one frame per level, and arguments
    enqueued from a shallower stack than the view's raised ``RecursionError`` here. On one line
    it is encoded in C, as deep as it was decoded."""
    if indent:
        try:
            return json.dumps(value, indent=2, ensure_ascii=False)
        except RecursionError:
            pass
    return json.dumps(value, ensure_ascii=False)


def page_json(raw: str) -> Shown:
    """Return stored JSON as the task page shows it: indented if at most PAGE_INDENT_CHARS
    long, else as stored, not decoded at all."""
    compact = len(raw) > PAGE_INDENT_CHARS
    text = raw if compact else pretty_json(raw)
    return shown(text, compact=compact, served_compact=len(raw) > INDENT_CHARS)


def page_value(value: Any, *, stored_chars: int) -> Shown:
    """Return a decoded value as the task page shows it: indented if the JSON it was read
    from is at most PAGE_INDENT_CHARS long, else on one line (json's fast C encoder)."""
    compact = stored_chars > PAGE_INDENT_CHARS
    text = pretty_value(value, indent=not compact)
    return shown(text, compact=compact, served_compact=stored_chars > INDENT_CHARS)


def when(ms: int | str | None) -> datetime | None:
    return from_ms(ms)


def named(value: str, limit: int = 60) -> str:
    """Return a value a request sent, in quotes and cut at ``limit`` characters, for a message
    that names it (a hand-made request may send anything, of any length)."""
    return f"“{value[:limit]}…”" if len(value) > limit else f"“{value}”"


def page_address(view_name: str, alias: str, stored_id: str) -> str:
    """Return the address of the admin page ``view_name`` of ``stored_id`` (a task or workflow
    id read from Redis), or "" where no URL can name it as one path segment. Ours are hex
    digits, "@" and a queue name, which has no "/" and is not "." or ".."; one written by hand
    may be anything: a "/" in it splits the URL into another alias and id (a link to the wrong
    page), one ending in "/" or empty has no URL at all (the page answered 500), and a browser
    reads "." and ".." as a way up."""
    if stored_id in ("", ".", "..") or "/" in stored_id:
        return ""
    return reverse(view_name, args=(alias, stored_id))


def state_label(state: str) -> str:
    return STATE_LABELS.get(state, state.upper() or "UNKNOWN")


def age(now_ms: int, then_ms: int | None) -> str:
    """Return a short duration such as "3 h 12 min" or "45 s"."""
    if then_ms is None:
        return ""
    seconds = max(0, (now_ms - then_ms) // 1000)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"


def queues_unread(names: QueueNames) -> str:
    """Say which queues a page could not read, on a Redis Cluster node that does not answer,
    with its error: the queue set (the page then lists the queues in QUEUES alone), and those
    with a part on such a node, unavailable; "" when it read them all (docs/lifecycle.md,
    After an outage or a stall)."""
    return " ".join(
        _set_unread(error, queues) if error is names.unknown else _unavailable(error, queues)
        for error, queues in names.unreached_by_node().items()
    )


def _set_unread(error: Exception, queues: list[str]) -> str:
    also = f", and those on that node are unavailable: {listed_names(queues)}" if queues else ""
    return (
        f"The queue set could not be read: {error} The queues listed are those in QUEUES "
        f"alone (a queue registered only in Redis is not listed){also}."
    )


def _unavailable(error: Exception, queues: list[str]) -> str:
    return (
        "The queues on a Redis Cluster node that does not answer are unavailable: "
        f"{listed_names(queues)}. {error}"
    )
