"""Timestamps as stored (whole ms since the epoch) and as Django shows them (datetimes).

Stored timestamps written by a worker or a producer are for display only; every decision about
time is taken on Redis ``TIME`` inside the scripts (docs/design.md, One clock).
"""

import math
import time
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils import timezone


def now_ms() -> int:
    """Return the local wall clock in ms: for display timestamps only, never for leases."""
    return time.time_ns() // 1_000_000


def run_time_ms(seconds: float) -> int:
    """Return a run of ``seconds`` in whole ms, rounded up: a run falls in the histogram
    buckets (whole ms) it belongs to. Cut down, one of 5.9 ms was counted in ``le="0.005"``."""
    return math.ceil(seconds * 1000)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MS = timedelta(milliseconds=1)
# from_ms: below 2**31 s (2038) a float in seconds is within a quarter µs of every ms, so it
# rounds to the exact µs; later ones take the exact sum.
FLOAT_EXACT_MS = 2**31 * 1000


def to_ms(value: datetime) -> int:
    """Return ``value`` in whole ms since the epoch, rounded down; a naive datetime is in
    ``TIME_ZONE``, as ``timezone.now()`` gives it without USE_TZ (not in a zone a request
    activated for its user). Exact: through a float, 9999-12-31 23:59:59.999999 rounded up
    into the year 10000, which no datetime can show."""
    if timezone.is_naive(value):
        zone = naive_zone()
        value = value.astimezone() if zone is None else value.replace(tzinfo=zone)
    return (value - EPOCH) // ONE_MS


def naive_zone() -> tzinfo | None:
    """Return the zone naive datetimes are in: ``TIME_ZONE``'s, or None for the host's (Django
    reads ``TIME_ZONE = None`` so, where ``get_default_timezone()`` raises ``TypeError``)."""
    return timezone.get_default_timezone() if settings.TIME_ZONE else None


def naive_zone_name() -> str:
    """Return the name of ``naive_zone``, for messages."""
    zone = naive_zone()
    return "the host's local time" if zone is None else str(zone)


@cache
def _use_tz() -> bool:
    """Return settings.USE_TZ, read once: a lazy settings lookup cost a worker about 1 µs per
    timestamp, four per task. Tests that override it clear this cache."""
    return bool(settings.USE_TZ)


@receiver(setting_changed)
def _forget_use_tz(*, setting: str, **kwargs: Any) -> None:
    if setting == "USE_TZ":
        _use_tz.cache_clear()


def from_ms(value: int | str | None) -> datetime | None:
    """Return the stored ms timestamp as the datetime Django would use: aware under USE_TZ,
    else naive in ``TIME_ZONE``, comparable with ``timezone.now()``.

    Absent reads as None, and so does a field written by hand that is no time ("garbage", or
    past the year 9999): a display time must not make a read fail, as the scripts read it.
    """
    if value is None or value == "":
        return None
    try:
        ms = int(value)
        # The float division rounds to the exact µs until 2038; the timedelta sum, exact for
        # every year, costs 0.1 µs more.
        if -FLOAT_EXACT_MS < ms < FLOAT_EXACT_MS:
            moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
        else:
            moment = EPOCH + timedelta(0, 0, 0, ms)
        # Without USE_TZ, the local time of the first or last hours a datetime holds in UTC
        # may fall outside them too.
        return moment if _use_tz() else moment.astimezone(naive_zone()).replace(tzinfo=None)
    except (ValueError, OverflowError, OSError):
        return None


def reads_back(value: datetime) -> bool:
    """Whether ``value`` stored as ms (``to_ms``) reads back as a datetime (``from_ms``), not as
    None: its UTC time is in the years 1 to 9999 (and its local one too, without USE_TZ)."""
    try:
        return from_ms(to_ms(value)) is not None
    except (ValueError, OverflowError):  # a naive one at the edges, in the host's local time
        return False
