"""Durations as settings and helpers take them: a number of seconds or a ``timedelta``."""

import math
from datetime import timedelta

from ..codec.times import ONE_MS


def seconds_of(value: object) -> float | None:
    """Return ``value`` (a number of seconds or a timedelta) in seconds, or None when it is
    not a finite number: a bool, a string, None, NaN, an infinity (which overflows a
    conversion to ms) or an int past every float. The caller judges the bounds and words its
    own error."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    try:
        return float(seconds) if math.isfinite(seconds) else None
    except OverflowError:  # an int past every float is read as an infinity
        return None


def whole_ms(value: float | timedelta) -> int:
    """Return ``value`` (finite seconds, or a timedelta) in whole milliseconds, a part of one
    dropped: Redis counts waits, TTLs and due times in whole ms.

    Reckoned to the microsecond, as a timedelta holds it, not as ``int(seconds * 1000)``: that
    product lands a hair below the whole ms as often as on it (1.001 s is 1000.9999999999999
    ms), and int() cut ``timedelta(milliseconds=1001)`` to 1000.
    """
    if isinstance(value, timedelta):
        return value // ONE_MS
    return round(value * 1_000_000) // 1000
