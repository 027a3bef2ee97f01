"""Durations as settings and helpers take them: a number of seconds or a ``timedelta``."""

import math
from datetime import timedelta


def seconds_of(value: object) -> float | None:
    """Return ``value`` (a number of seconds or a timedelta) in seconds, or None when it is
    not a finite number: a bool, a string, None, NaN or an infinity (which overflows a
    conversion to ms). The caller judges the bounds and words its own error."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return float(seconds) if math.isfinite(seconds) else None
