"""A running task's progress as its record stores it, and the value ``progress_of`` returns.

A report is four fields of the task's record hash (docs/lifecycle.md, Progress): how much is
done and of what total, written as Python writes a number; a note; and ``progress_ms``, when
progress.lua wrote it, on the Redis clock.
"""

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from .times import from_ms

PROGRESS_FIELDS = ("progress_done", "progress_total", "progress_note", "progress_ms")


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """The last progress a task reported: ``done`` of ``total`` (None: not known), a note,
    and when it was written (aware under ``USE_TZ``, as a TaskResult's times are)."""

    done: int | float
    total: int | float | None
    note: str
    reported_at: datetime

    @property
    def percent(self) -> int | None:
        """Whole percent done, rounded down, so 100 means done; None without a total above 0."""
        if not self.total:
            return None
        if self.done >= self.total:
            return 100
        # Exact, in fractions: 29 / 100 * 100 is 28.999999999999996 in floats, and done * 100
        # could pass a float's range.
        return _as_written(self.done) * 100 // _as_written(self.total)


def _as_written(number: int | float) -> Fraction:
    """The exact value of ``number`` as written: a float's shortest repr (0.29 is 29/100, not
    the binary fraction a hair below it that Python stores)."""
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def stored_number(value: int | float) -> str:
    """Return ``value`` as the record stores it (``repr``: exact for an int, round-trips a
    float)."""
    return repr(value)


def _number(text: str | None) -> int | float | None:
    """Read a stored number; absent, or anything but a finite number of 0 or more within a
    float's range (written by hand), reads as None."""
    if not text:
        return None
    number: int | float
    try:
        number = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
    return number if 0 <= number <= sys.float_info.max else None


def stored_progress(record: Mapping[str, str | None]) -> Progress | None:
    """Return the progress stored in ``record`` (its fields by name), or None if it has none.

    A report needs its time and a number done; a total that does not read is unknown.
    """
    reported_at = from_ms(record.get("progress_ms"))
    done = _number(record.get("progress_done"))
    if reported_at is None or done is None:
        return None
    return Progress(
        done=done,
        total=_number(record.get("progress_total")),
        note=record.get("progress_note") or "",
        reported_at=reported_at,
    )
