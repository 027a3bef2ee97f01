"""Per-queue limits read from ``OPTIONS["queue_limits"]``: concurrency and a start rate.

Both are enforced by the acquire script (docs/schedules.md, Per-queue limits): concurrency against
what the queue holds (its leases: reserved and running), the rate as a one-token bucket on Redis
``TIME``, so "600/m" starts at most one task every 100 ms and never more than 600 in any minute.
The interval is kept in microseconds: in whole milliseconds "750/s" was one start every 2 ms,
500 a second (docs/schedules.md, Per-queue limits).
"""

import re
from dataclasses import dataclass
from typing import Any

from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import shown

# N of "N/s" past 7 digits (leading zeros aside) is past 3,600,000/h, one start a millisecond:
# refused unread, as int() refuses 4,300 digits and more (sys.get_int_max_str_digits).
RATE_PATTERN = re.compile(r"^\s*0*(\d{1,7})\s*/\s*([smh])\s*$")
PERIOD_MS = {"s": 1000, "m": 60_000, "h": 3_600_000}
KNOWN = ("concurrency", "rate")
# The acquire script reads a concurrency as a Lua number, a double, whole only up to 2**53; a
# far larger int fails to be written at all (sys.get_int_max_str_digits), in every acquire.
MAX_CONCURRENCY = 2**53


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueLimit:
    """The limits of one queue; None means that limit is off."""

    concurrency: int | None = None
    rate: str | None = None  # as written, e.g. "600/m", for display
    token_interval_us: int | None = None  # µs between two starts under ``rate``


def _concurrency(queue: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_CONCURRENCY:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['queue_limits'][{queue!r}]['concurrency'] is {shown(value)}. Use a "
            "positive whole number: the most tasks of that queue running at once across all "
            "workers, at most 2**53; leave 'concurrency' out for no limit."
        )
    return value


def _token_interval_us(queue: str, value: object) -> int:
    match = RATE_PATTERN.match(value) if isinstance(value, str) else None
    if match is None or int(match[1]) == 0 or PERIOD_MS[match[2]] < int(match[1]):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['queue_limits'][{queue!r}]['rate'] is {shown(value)}. Use 'N/s', 'N/m' or "
            "'N/h' with N a positive whole number of starts, at most one per millisecond "
            "(e.g. '600/m'); leave 'rate' out for no limit."
        )
    period_us = PERIOD_MS[match[2]] * 1000
    return -(-period_us // int(match[1]))  # rounded up: never faster than asked


def read_queue_limits(value: object) -> dict[str, QueueLimit]:
    """Return ``OPTIONS["queue_limits"]`` as one ``QueueLimit`` per queue, or raise the fix."""
    if not isinstance(value, dict):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['queue_limits'] is {shown(value)}. Use a dict of queue name to limits, e.g. "
            "{'reports': {'concurrency': 2, 'rate': '600/m'}}."
        )
    limits = {}
    for queue, limit in value.items():
        if not isinstance(limit, dict) or not limit:
            raise ImproperlyConfiguredThreadmill(
                f"OPTIONS['queue_limits'][{queue!r}] is {shown(limit)}. Use a dict with "
                "'concurrency' and/or 'rate', e.g. {'concurrency': 2, 'rate': '600/m'}."
            )
        _refuse_unknown_keys(queue, limit)
        limits[queue] = _limit(queue, limit)
    return limits


def _refuse_unknown_keys(queue: str, limit: dict[Any, Any]) -> None:
    """Name each key of one queue's limits that is no limit: a typo would limit nothing."""
    unknown = sorted(set(limit) - set(KNOWN), key=repr)
    if unknown:
        paths = ", ".join(f"OPTIONS['queue_limits'][{queue!r}][{key!r}]" for key in unknown)
        verb, pronoun = (
            ("is not a limit", "it") if len(unknown) == 1 else ("are not limits", "them")
        )
        raise ImproperlyConfiguredThreadmill(
            f"{paths} {verb}. The limits are 'concurrency' and 'rate': rename or remove "
            f"{pronoun}, e.g. {{'concurrency': 2, 'rate': '600/m'}}."
        )


def _limit(queue: str, limit: dict[str, Any]) -> QueueLimit:
    """Read one queue's limits; a key given is checked even when None (it would limit nothing)."""
    rate = limit.get("rate")
    return QueueLimit(
        concurrency=_concurrency(queue, limit["concurrency"]) if "concurrency" in limit else None,
        rate=rate,
        token_interval_us=_token_interval_us(queue, rate) if "rate" in limit else None,
    )
