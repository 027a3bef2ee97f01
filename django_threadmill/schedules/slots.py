"""When a schedule's slots fall: cron in its time zone (with cronsim), or every N since the epoch.

A slot is an instant; cron slots follow the time zone's DST rules as cronsim's forward walk
applies them: a job whose local time is skipped in spring runs once at the first valid minute
after the gap, one whose local time repeats in autumn runs once, at the first occurrence, and
one with a wildcard hour runs in both passes of the repeated hour.
"""

import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.conf import settings

from ..conf.schedules import Schedule

if TYPE_CHECKING:
    from cronsim import CronSim

# The latest slot is looked for this far back first, then twice as far, and so on: the last
# look-back spans a cron's longest gap (29 February, when a century year skips it: 8 years).
FIRST_LOOK_BACK = timedelta(minutes=1)
LONGEST_LOOK_BACK = timedelta(days=366 * 16)
CRON_FIELDS = 5  # minute, hour, day of month, month, day of week
# The crontab variables that set the zone of the lines after them (cronie's CRON_TZ, and TZ):
# a schedule takes the zone as its 'timezone'.
ZONE_VARIABLES = ("CRON_TZ=", "TZ=")
# cron's nicknames, which cronsim does not read, as the five fields each stands for.
NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def cron_class() -> "type[CronSim]":
    """Return cronsim's parser, or raise with the fix when the ``cron`` extra is missing."""
    try:
        from cronsim import CronSim
    except ImportError as exc:
        raise ImportError(
            "Cron schedules need the cronsim package. Install django-threadmill[cron]."
        ) from exc
    return CronSim


# The zone key zoneinfo reads from the host's /etc/localtime: a name for the host's local time.
HOST_ZONE = "localtime"


class NoTimeZone(ValueError):
    """A cron schedule's zone is the host's local time: it has no ``timezone`` and Django's
    ``TIME_ZONE`` is None, or its zone is ``"localtime"``; or the host has no time zone
    database to load any zone from."""


# What zone_of raises for a zone it cannot give: NoTimeZone (a ValueError), zoneinfo's
# ZoneInfoNotFoundError for a name it cannot load ("America", a directory of zones), ValueError
# for a key it refuses to read.
ZONE_ERRORS = (ZoneInfoNotFoundError, ValueError)


def zone_of(name: str | None) -> ZoneInfo:
    """Return the schedule's time zone: its own, else Django's ``TIME_ZONE`` (read each time).

    ``TIME_ZONE = None`` leaves the process in the host's local time, which has no zone name to
    give cronsim the DST rules by, and differs from host to host: that is refused, naming the fix,
    rather than guessed (docs/schedules.md, Periodic tasks). So is ``"localtime"``, which
    zoneinfo reads from each host's /etc/localtime. A host with no zone database at all names
    that, not the zone: its "Europe/Berlin" was called unknown, the hint naming it again.
    """
    zone = name or settings.TIME_ZONE
    if not zone:
        raise NoTimeZone(
            f"it has no time zone: it sets no 'timezone' and TIME_ZONE is {settings.TIME_ZONE!r}, "
            "the host's local time, which has no zone name to follow daylight saving time by. "
            "Set TIME_ZONE, or give the schedule a 'timezone' such as 'Europe/Berlin'"
        )
    given = "its 'timezone'" if name else "TIME_ZONE"
    if zone == HOST_ZONE:
        raise NoTimeZone(
            f"its time zone ({given}) is {zone!r}, the host's /etc/localtime, which differs from "
            "host to host: supervisors on hosts in other zones would fire each slot at another "
            "instant. Name the zone instead, such as 'Europe/Berlin'"
        )
    try:
        return ZoneInfo(zone)  # zoneinfo caches instances by key itself
    except ZoneInfoNotFoundError:
        if available_timezones():  # the name is wrong, not the host
            raise
        searched = ", ".join(zoneinfo.TZPATH) or "no TZPATH"
        raise NoTimeZone(
            f"its time zone ({given}) {zone!r} cannot be loaded: this host has no time zone "
            f"database for zoneinfo to read (none in {searched}, and no tzdata package), as "
            "in an Alpine image. Install one: pip install tzdata, or the system's tzdata package"
        ) from None


def _five_fields(cron: str) -> str:
    """Return ``cron``, or refuse one without five fields.

    cronsim reads six fields as seconds first, and then follows no daylight saving time:
    ``0 30 2 * * *`` in Europe/Berlin ran twice on the fall-back night and not at all on the
    spring-forward one (docs/schedules.md, Daylight saving time). A nickname such as
    ``@daily`` is refused with the five fields it stands for, not as one field, and cronie's
    zone prefix (``CRON_TZ=Europe/Berlin 0 3 * * *``) with the 'timezone' key it belongs in,
    not as six fields.
    """
    nickname = cron.strip().lower()
    if nickname in NICKNAMES:
        raise ValueError(f"{cron.strip()!r} is a nickname: write {NICKNAMES[nickname]!r}")
    if nickname == "@reboot":
        raise ValueError(
            "'@reboot' has no five-field form: schedules run on slots of the clock, not when a "
            "worker starts. Enqueue the task from your deploy instead"
        )
    fields = cron.split()
    if fields and fields[0].upper().startswith(ZONE_VARIABLES):
        zone = fields[0].partition("=")[2].strip("'\"")  # CRON_TZ="Europe/Berlin" too
        raise ValueError(
            f"{fields[0]!r} sets the time zone in a crontab, which a schedule takes as its "
            f"'timezone' key: write 'cron': {' '.join(fields[1:])!r}, 'timezone': {zone!r}"
        )
    count = len(fields)
    if count != CRON_FIELDS:
        raise ValueError(
            f"it has {count} field{'s' if count != 1 else ''}, not the five of minute, hour, "
            "day of month, month and day of week: seconds and years are not supported"
        )
    return cron


def _cron_after(schedule: Schedule, moment: datetime) -> datetime:
    """Return the forward walk's first slot after ``moment``, in UTC."""
    local = moment.astimezone(zone_of(schedule.timezone))
    return next(cron_class()(_five_fields(schedule.cron or ""), local)).astimezone(UTC)


def previous_slot(schedule: Schedule, now: datetime) -> datetime:
    """Return the latest slot at or before ``now`` (an aware datetime), in UTC."""
    if schedule.every_ms is None:
        return _latest_cron_slot(schedule, now)
    now_ms = int(now.timestamp() * 1000)
    return datetime.fromtimestamp(now_ms // schedule.every_ms * schedule.every_ms / 1000, UTC)


def next_slot(schedule: Schedule, now: datetime) -> datetime:
    """Return the first slot after ``now``, in UTC."""
    return slots_around(schedule, now)[1]


def slots_around(schedule: Schedule, now: datetime) -> tuple[datetime, datetime]:
    """Return the latest slot at or before ``now`` and the first after it, in UTC, from one
    walk: the next is walked on from the latest, not from ``now``. cronsim, started after a
    DST change that skipped the start of an hour (Pacific/Chatham's 02:45 to 03:45), rounds
    down into the gap and lands an hour late (from 03:50, ``0 */2 * * *`` answered 06:00, and
    a supervisor started then skipped the 04:00 slot)."""
    latest = previous_slot(schedule, now)
    if schedule.every_ms is None:
        return latest, _next_cron_slot(schedule, latest)
    return latest, latest + timedelta(milliseconds=schedule.every_ms)


def _next_cron_slot(schedule: Schedule, now: datetime) -> datetime:
    # cronsim's forward walk, started in the second pass of a repeated hour, can answer the
    # first pass's earlier instant (a supervisor then found the slot due at once, again and
    # again, until the hour passed): walk on until after ``now``.
    slot = _cron_after(schedule, now)
    while slot <= now:
        slot = _cron_after(schedule, slot)
    return slot


def _latest_cron_slot(schedule: Schedule, now: datetime) -> datetime:
    """Return the forward walk's last slot not after ``now``, found from a look-back that
    doubles until it holds one.

    cronsim's reverse walk is not used: it skips the second pass of a repeated hour that the
    forward walk has (a wildcard hour's 02:00 CET after 02:00 CEST), and around Pacific/Chatham's
    fall back (03:45 to 02:45) it never returned for ``*/20 2 * * *``, holding the supervisor
    that fired it (docs/schedules.md, Daylight saving time).
    """
    look_back = FIRST_LOOK_BACK
    while (slot := _next_cron_slot(schedule, now - look_back)) > now:
        if look_back >= LONGEST_LOOK_BACK:
            raise ValueError(f"{schedule.when} has no slot in the 16 years before {now}")
        look_back *= 2
    while (later := _next_cron_slot(schedule, slot)) <= now:
        slot = later
    return slot


def slot_ms(slot: datetime) -> int:
    return round(slot.timestamp() * 1000)
