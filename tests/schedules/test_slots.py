"""Slots: every N since the epoch, cron in the schedule's time zone, across DST changes."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.test import override_settings

from django_threadmill.conf.schedules import Schedule
from django_threadmill.schedules.slots import next_slot, previous_slot

BERLIN = ZoneInfo("Europe/Berlin")


def cron(expression: str, timezone: str | None = "Europe/Berlin") -> Schedule:
    return Schedule(name="c", task="x.y", cron=expression, timezone=timezone)


def local(*fields: int, fold: int = 0) -> datetime:
    """Return a Berlin wall time as a UTC instant (aware datetimes in a fold never compare
    equal across zones, PEP 495)."""
    return datetime(*fields, tzinfo=BERLIN, fold=fold).astimezone(UTC)  # type: ignore[misc]


def test_every_slots_are_multiples_since_the_epoch() -> None:
    every = Schedule(name="e", task="x.y", every_ms=30_000)
    now = datetime(2026, 11, 30, 12, 0, 40, 500_000, tzinfo=UTC)
    assert previous_slot(every, now) == datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
    assert next_slot(every, now) == datetime(2026, 11, 30, 12, 1, 0, tzinfo=UTC)
    exact = datetime(2026, 11, 30, 12, 1, 0, tzinfo=UTC)
    assert previous_slot(every, exact) == exact  # a slot is due at its own instant
    assert next_slot(every, exact) == exact + timedelta(seconds=30)


def test_cron_slots_are_in_the_schedule_time_zone() -> None:
    nightly = cron("0 3 * * *")
    now = local(2026, 11, 30, 12, 0)
    assert previous_slot(nightly, now) == local(2026, 11, 30, 3, 0)
    assert next_slot(nightly, now) == local(2026, 12, 1, 3, 0)
    assert previous_slot(nightly, local(2026, 11, 30, 3, 0)) == local(2026, 11, 30, 3, 0)


def test_cron_defaults_to_django_time_zone() -> None:
    with override_settings(TIME_ZONE="America/New_York"):
        slot = next_slot(cron("0 3 * * *", timezone=None), datetime(2026, 11, 30, tzinfo=UTC))
    assert slot == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # 03:00 EST


def test_a_skipped_local_time_runs_once_after_the_gap() -> None:
    # 2026-03-29 in Berlin: 02:00 jumps to 03:00, so 02:30 does not exist that day.
    job = cron("30 2 * * *")
    slot = next_slot(job, local(2026, 3, 28, 12, 0))
    assert slot == local(2026, 3, 29, 3, 0)
    assert next_slot(job, slot) == local(2026, 3, 30, 2, 30)
    assert previous_slot(job, local(2026, 3, 29, 3, 10)) == slot


def test_a_repeated_local_time_runs_once() -> None:
    # 2026-10-25 in Berlin: 03:00 falls back to 02:00, so 02:30 happens twice.
    job = cron("30 2 * * *")
    first = next_slot(job, local(2026, 10, 24, 12, 0))
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST, the first pass
    assert next_slot(job, first) == local(2026, 10, 26, 2, 30)
    second_pass = local(2026, 10, 25, 2, 45, fold=1)  # CET, after the fall back
    assert previous_slot(job, second_pass) == first


def test_a_wildcard_hour_runs_in_both_passes_of_a_repeated_hour() -> None:
    # 2026-10-25 in Berlin: 02:00-02:59 happens twice. Every slot of the forward walk must also
    # be the latest slot at its own instant and just after it: the scheduler wakes at a slot
    # and fires previous_slot(now), which once answered the first pass's slot again.
    for expression, per_hour in [("0 * * * *", 1), ("*/5 * * * *", 12)]:
        job = cron(expression)
        start, end = local(2026, 10, 25, 1, 59), local(2026, 10, 25, 4, 0)
        slots, slot = [], start
        while (slot := next_slot(job, slot)) < end:
            slots.append(slot)
            assert previous_slot(job, slot) == slot
            assert previous_slot(job, slot + timedelta(seconds=59)) == slot
        # after 01:59 CEST and before 04:00 CET: 02:xx CEST, 02:xx CET and 03:xx CET
        assert len(slots) == 3 * per_hour
        assert local(2026, 10, 25, 2, 0, fold=1) in slots


def test_a_wildcard_minute_follows_the_clock_through_both_changes() -> None:
    # Debian cron's rule for a job with a wildcard or step in its minute (or hour) field: it
    # runs by the clock, so twice in a repeated hour and not in a skipped one (no 03:00 run).
    job = cron("*/20 2 * * *")
    # 29 March: 02:00-02:59 does not exist, so the next slot after the 28th is on the 30th.
    assert next_slot(job, local(2026, 3, 28, 12, 0)) == local(2026, 3, 30, 2, 0)
    autumn, slot = [], local(2026, 10, 25, 1, 0)
    while (slot := next_slot(job, slot)) < local(2026, 10, 26, 0, 0):
        autumn.append(slot)
    passes = [
        local(2026, 10, 25, 2, minute, fold=fold) for fold in (0, 1) for minute in (0, 20, 40)
    ]
    assert autumn == passes


def test_the_next_slot_from_the_second_pass_of_a_repeated_hour_is_after_it() -> None:
    # 2026-10-25 in Berlin: 02:30 ran at 02:30 CEST. A supervisor (re)started at 02:05 CET was
    # told 02:30 CEST, already past, so it found the slot due at once, over and over.
    job = cron("30 2 * * *")
    for minute in (1, 5, 29, 30, 45):
        now = local(2026, 10, 25, 2, minute, fold=1)
        assert next_slot(job, now) == local(2026, 10, 26, 2, 30)


def test_the_latest_slot_around_a_45_minute_fall_back_is_found() -> None:
    # 2027-04-04 on the Chatham Islands: 03:45 CHADT (+13:45) falls back to 02:45 CHAST
    # (+12:45). cronsim's reverse walk never returned here for */20 2 * * *, which held the
    # supervisor firing it; the forward walk gives 02:00, 02:20 and 02:40 CHADT.
    job = cron("*/20 2 * * *", timezone="Pacific/Chatham")
    chatham = ZoneInfo("Pacific/Chatham")
    last = datetime(2027, 4, 4, 2, 40, tzinfo=chatham).astimezone(UTC)
    for minute in (0, 20, 44):
        now = datetime(2027, 4, 4, 3, minute, tzinfo=chatham).astimezone(UTC)
        assert previous_slot(job, now) == last
    assert previous_slot(job, last - timedelta(seconds=1)) == last - timedelta(minutes=20)


def test_the_latest_slot_is_found_however_far_back_it_is() -> None:
    leap_day = cron("0 12 29 2 *")
    assert previous_slot(leap_day, local(2027, 3, 1, 0, 0)) == local(2024, 2, 29, 12, 0)
    first_of_month = cron("* * 1 * *")  # every minute of one day: the walk from the look-back
    assert previous_slot(first_of_month, local(2026, 12, 28, 9, 0)) == local(2026, 12, 1, 23, 59)
