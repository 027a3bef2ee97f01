"""Bounds of OPTIONS values: durations from a floor to a ceiling, counts up to a ceiling.

A value out of its bounds is refused naming the option, the bound and why. The readers take
the option as an error names it (``option("lease_ttl")``), so a value inside
``connection_options`` is judged by the same rule and words as the option it stands for.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import shown
from .durations import seconds_of


@dataclass(frozen=True, slots=True)
class MinDuration:
    """The shortest a duration option may be: in seconds, in words, as the fix says it, and why."""

    seconds: float
    words: str
    fix: str
    why: str


# Redis takes TTLs and WAIT timeouts in whole milliseconds: a shorter duration would round to
# 0 ms, which PEXPIRE reads as "expire now" and WAIT as "wait forever".
ONE_MS = MinDuration(0.001, "1 ms", "0.001 seconds", "Redis counts time in whole milliseconds")
# A lease of milliseconds lapsed between its renewals: its tasks ran dozens of times, then FAILED.
SHORTEST_LEASE = MinDuration(
    1.0,
    "1 second",
    "1 second",
    "a worker renews its leases every lease_ttl / 3, which must leave room for a Redis round "
    "trip and a busy process, or leases lapse while their tasks run and the tasks run again "
    "(docs/worker.md, Leases)",
)


@dataclass(frozen=True, slots=True)
class MaxDuration:
    """The longest a duration option may be, in seconds and in words."""

    seconds: int
    words: str


# A result kept longer is a mistake; far longer overflows PEXPIRE and datetime.
TEN_YEARS = MaxDuration(10 * 365 * 86400, "10 years")
# A timeout (socket, pool, WAIT) or lease longer is a mistake: None means no socket timeout, and
# a lease is renewed while its task runs, so a long task needs no long lease. Far longer
# overflows a socket's timeout, WAIT's and the lease keeper's datetime.
ONE_DAY = MaxDuration(86400, "1 day")


@dataclass(frozen=True, slots=True)
class MaxCount:
    """The largest a whole-number option may be, and why."""

    count: int
    why: str


# A larger payload or result would fail inside Redis, after the work.
MAX_BYTES = MaxCount(512 * 1024 * 1024, "Redis takes no string past 512 MB (proto-max-bulk-len)")
# A pool is filled with empty slots when made: 10**7 took 17 s and 139 MB, 10**20 never ended.
MAX_CONNECTIONS = MaxCount(
    10_000,
    "Redis serves 10000 clients by default (maxclients), and redis-py's pool sets aside a slot "
    "for each connection when it is made",
)


def option(*names: str) -> str:
    """Return how an error names an option: ``OPTIONS['lease_ttl']``, or one inside another,
    ``OPTIONS['connection_options']['socket_timeout']``."""
    return "OPTIONS" + "".join(f"[{name!r}]" for name in names)


def read_seconds(
    where: str,
    value: object,
    at_most: MaxDuration,
    *,
    allow_none: bool = False,
    allow_zero: bool = False,
    at_least: MinDuration = ONE_MS,
) -> float | None:
    """Return ``value`` in seconds, or None or 0 where allowed; refuse it outside ``at_least``
    to ``at_most``."""
    if value is None and allow_none:
        return None
    seconds = seconds_of(value)
    if seconds == 0 and allow_zero:
        return 0.0
    given = value.total_seconds() if isinstance(value, timedelta) else value
    said = f"{where} is {shown(given)}"
    others = (" or 0" if allow_zero else "") + (" or None" if allow_none else "")
    if seconds is None or seconds <= 0:
        raise ImproperlyConfiguredThreadmill(
            f"{said}. Use a positive number of seconds or a timedelta{others}."
        )
    if seconds < at_least.seconds:
        raise ImproperlyConfiguredThreadmill(
            f"{said}, shorter than {at_least.words}. Use at least {at_least.fix}: {at_least.why}."
        )
    if seconds > at_most.seconds:
        raise ImproperlyConfiguredThreadmill(
            f"{said}, longer than {at_most.words}. Use at most {at_most.seconds} seconds{others}."
        )
    return seconds


def read_count(where: str, value: object, at_most: MaxCount) -> int:
    """Return ``value`` if it is a whole number from 1 to ``at_most``, else raise with the fix."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ImproperlyConfiguredThreadmill(
            f"{where} is {shown(value)}. Use a positive whole number."
        )
    if value > at_most.count:
        raise ImproperlyConfiguredThreadmill(
            f"{where} is {shown(value)}, above {at_most.count}. Use at most {at_most.count}: "
            f"{at_most.why}."
        )
    return value


type ValueReader = Callable[[str, object], object]  # (how an error names it, the value) -> value

# The options connection_options may override too (conf/topology.py): one rule each, so an
# override is judged by the same bounds and words as the option it stands for.
POOL_RULES: dict[str, ValueReader] = {
    "socket_timeout": lambda where, v: read_seconds(where, v, ONE_DAY, allow_none=True),
    "socket_connect_timeout": lambda where, v: read_seconds(where, v, ONE_DAY, allow_none=True),
    "pool_timeout": lambda where, v: read_seconds(where, v, ONE_DAY),
    "max_connections": lambda where, v: read_count(where, v, MAX_CONNECTIONS),
}
