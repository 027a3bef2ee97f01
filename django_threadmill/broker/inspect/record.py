"""Read one task's record for its page: a bounded number of fields and of bytes.

A record may hold a 64 MB result and 1,000 tracebacks, and one written by hand any number of
fields; the page reads what fits, and names what it left out (docs/admin.md, Task detail).
"""

from collections.abc import Collection
from dataclasses import dataclass

from ...codec.progress import PROGRESS_FIELDS
from ...retry import MAX_ATTEMPTS
from ..broker import Broker
from ..raw_replies import escaped, is_utf8
from ..reads import undecodable_record

# The most bytes of stored values one task's page reads: a record may hold a 64 MB result
# and 1,000 tracebacks of 64K characters, and reading them all made each view read and decode
# tens of MB. A value left out is named with its size (TaskDetail.unread).
DETAIL_READ_BYTES = 2 * 1024 * 1024
# The most bytes of one value "Show all" reads: the default max_result_bytes. Redis hands a
# hash field over whole, so a bigger one (a raised option, or by hand) is refused unread.
SHOW_ALL_BYTES = 64 * 1024 * 1024
# More fields than a record of ours holds (an error per attempt and some 20 others). Past
# this, HKEYS would read every name of a record written by hand, millions of them.
MAX_RECORD_FIELDS = MAX_ATTEMPTS + 100
# The fields the scripts write, read by name from a record holding more than MAX_RECORD_FIELDS.
WRITTEN_FIELDS = (
    "payload",
    "state",
    "score",
    "token",
    "enqueued_ms",
    "run_after_ms",
    "ready_ms",
    "started_ms",
    "attempted_ms",
    "finished_ms",
    "workers",
    "nerrors",
    "result",
    "unique",
    "unique_ms",
    "workflow",
    "stop",
    "stop_why",
    "outboxed",
    *PROGRESS_FIELDS,
    *(f"error:{n}" for n in range(1, MAX_ATTEMPTS + 1)),
)


@dataclass(frozen=True, slots=True)
class RecordValues:
    """What a page read of one record: its values, the size of each value it left unread,
    and why it looked at only some of the fields ("" when it looked at all)."""

    values: dict[bytes, bytes]
    unread: dict[bytes, int]
    fields_left_out: str


def not_utf8(task_id: str, key: str, record: dict[bytes, bytes]) -> str:
    """Say which fields of a record hold bytes that are not UTF-8 ("" when none do)."""
    names = [
        escaped(name) for name, value in record.items() if not (is_utf8(name) and is_utf8(value))
    ]
    if not names:
        return ""
    return (
        f"{undecodable_record(task_id, key)} Each such byte is shown here as \\xNN; in: "
        f"{', '.join(names)}."
    )


def _error_number(name: bytes) -> int | None:
    """Return the attempt number of an ``error:<n>`` field name, None for any other field."""
    kind, _, number = name.partition(b":")
    return int(number) if kind == b"error" and number.isdigit() else None


def _within_budget(sizes: dict[bytes, int], whole: set[bytes], budget: int) -> list[bytes]:
    """Return the fields to read: those in ``whole`` up to SHOW_ALL_BYTES each, then others
    while they fit ``budget``.

    Fields other than errors come first, smallest first (states, times, then the payload and
    the result), then the errors, newest first: the page shows the latest tracebacks whole and
    earlier attempts a line each. A value too big for what is left is passed over, not cut.
    """
    chosen = [name for name in sizes if name in whole and sizes[name] <= SHOW_ALL_BYTES]
    left = budget - sum(sizes[name] for name in chosen)

    def order(name: bytes) -> tuple[int, int]:
        number = _error_number(name)
        return (0, sizes[name]) if number is None else (1, -number)

    for name in sorted(set(sizes) - whole, key=order):
        if sizes[name] <= max(left, 0):  # an empty value, or a name we write that is absent
            chosen.append(name)
            left -= sizes[name]
    return chosen


def _left_out(key: str, count: int, looked_at: int) -> str:
    """Say how many fields of record ``key`` (``count`` in all) the page did not look at."""
    return (
        f"Record {key!r} holds {count:,} fields, more than a task's record has "
        f"({MAX_RECORD_FIELDS:,} at most), so something other than django-threadmill wrote "
        f"them. This page read the {looked_at:,} fields django-threadmill writes, by name, "
        f"and left out the other {count - looked_at:,}. Look at them (redis-cli HSCAN), then "
        "delete the fields that do not belong (HDEL) or the record "
        "(docs/lifecycle.md, Damaged records)."
    )


def read_values(broker: Broker, key: str, count: int, whole: Collection[str]) -> RecordValues:
    """Return the values of record ``key`` (``count`` fields, its HLEN) that fit
    DETAIL_READ_BYTES, and those in ``whole`` up to SHOW_ALL_BYTES each.

    Three round trips: ``HKEYS`` (or, past MAX_RECORD_FIELDS, the fields we write by name),
    ``HSTRLEN`` of each field, then ``HMGET``.
    """
    oversized = count > MAX_RECORD_FIELDS
    with broker.translated_errors(read=True):
        if oversized:
            names = [name.encode() for name in WRITTEN_FIELDS]
        else:
            names = broker.raw_command("HKEYS", key)
        with broker.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hstrlen(key, name)
            sizes = dict(zip(names, (int(size) for size in pipe.execute()), strict=True))
        wanted = _within_budget(sizes, {name.encode() for name in whole}, DETAIL_READ_BYTES)
        read = broker.raw_command("HMGET", key, *wanted) if wanted else []
    values = {name: value for name, value in zip(wanted, read, strict=True) if value is not None}
    chosen = set(wanted)
    unread = {name: size for name, size in sizes.items() if name not in chosen}
    return RecordValues(
        values=values,
        unread=unread,
        fields_left_out=_left_out(key, count, len(values) + len(unread)) if oversized else "",
    )
