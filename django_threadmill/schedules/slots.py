"""When a schedule's slots fall: cron in its time zone (with cronsim), or every N since the epoch.

A slot is an instant; cron slots follow the time zone's DST rules as cronsim's forward walk
applies them: a job whose local time is skipped in spring runs once at the first valid minute
after the gap, one whose local time repeats in autumn runs once, at the first occurrence, and
one with a wildcard hour runs in both passes of the repeated hour.
"""

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from django.conf import settings

from ..conf.schedules import Schedule

if TYPE_CHECKING:
    from cronsim import CronSim

ONE_MICROSECOND = timedelta(microseconds=1)  # cronsim's reverse walk excludes its start


def cron_class() -> "type[CronSim]":
    """Return cronsim's parser, or raise with the fix when the ``cron`` extra is missing."""
    try:
        from cronsim import CronSim
    except ImportError as exc:
        raise ImportError(
            "Cron schedules need the cronsim package. Install django-threadmill[cron]."
        ) from exc
    return CronSim


def zone_of(name: str | None) -> ZoneInfo:
    """Return the schedule's time zone: its own, else Django's ``TIME_ZONE`` (read each time)."""
    return ZoneInfo(name or settings.TIME_ZONE)  # zoneinfo caches instances by key itself


def _cron_neighbour(schedule: Schedule, now: datetime, *, reverse: bool) -> datetime:
    local = now.astimezone(zone_of(schedule.timezone))
    start = local + ONE_MICROSECOND if reverse else local
    found = next(cron_class()(schedule.cron or "", start, reverse=reverse))
    return found.astimezone(UTC)


def previous_slot(schedule: Schedule, now: datetime) -> datetime:
    """Return the latest slot at or before ``now`` (an aware datetime), in UTC."""
    if schedule.every_ms is None:
        # cronsim's reverse walk skips the second pass of a repeated hour that its forward walk
        # has (a wildcard hour's 02:00 CET after 02:00 CEST): the slots are the forward walk's,
        # so step forward from the reverse walk's answer to the last slot not after ``now``.
        slot = _cron_neighbour(schedule, now, reverse=True)
        while (later := _cron_neighbour(schedule, slot, reverse=False)) <= now:
            slot = later
        return slot
    now_ms = int(now.timestamp() * 1000)
    return datetime.fromtimestamp(now_ms // schedule.every_ms * schedule.every_ms / 1000, UTC)


def next_slot(schedule: Schedule, now: datetime) -> datetime:
    """Return the first slot after ``now``, in UTC."""
    if schedule.every_ms is None:
        return _next_cron_slot(schedule, now)
    return previous_slot(schedule, now) + timedelta(milliseconds=schedule.every_ms)


def _next_cron_slot(schedule: Schedule, now: datetime) -> datetime:
    # cronsim's forward walk, started in the second pass of a repeated hour, can answer the
    # first pass's earlier instant (a supervisor then found the slot due at once, again and
    # again, until the hour passed): walk on until after ``now``.
    slot = _cron_neighbour(schedule, now, reverse=False)
    while slot <= now:
        slot = _cron_neighbour(schedule, slot, reverse=False)
    return slot


def slot_ms(slot: datetime) -> int:
    return round(slot.timestamp() * 1000)
