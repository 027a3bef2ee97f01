"""Stored timestamps: whole ms since the epoch, read back as the datetimes Django shows."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from django_threadmill.codec.times import from_ms, run_time_ms, to_ms


@pytest.mark.parametrize(
    ("moment", "ms"),
    [
        (datetime(1970, 1, 1, tzinfo=UTC), 0),
        (datetime(2026, 12, 2, 6, 30, 0, 123_999, tzinfo=UTC), 1_796_193_000_123),
        (datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC), -1),
        (datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), 253_402_300_799_999),
    ],
)
def test_to_ms_rounds_down_to_the_ms_exactly(moment: datetime, ms: int) -> None:
    assert to_ms(moment) == ms


@override_settings(USE_TZ=True)
def test_the_last_ms_a_datetime_can_show_reads_back() -> None:
    last = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    read = from_ms(to_ms(last))  # it once read as None: to_ms rounded it into the year 10000
    assert read is not None
    assert read == last - timedelta(microseconds=999)


@pytest.mark.parametrize("value", ["abc", str(10**20), ""])
def test_a_stored_time_that_is_no_time_reads_as_none(value: str) -> None:
    assert from_ms(value) is None


@override_settings(USE_TZ=False, TIME_ZONE="Asia/Tokyo")
def test_a_time_whose_local_time_is_past_9999_reads_as_none_without_use_tz() -> None:
    # 9999-12-31 23:00 UTC is 08:00 in the year 10000 in Tokyo: make_naive raised OverflowError.
    assert from_ms(to_ms(datetime(9999, 12, 31, 23, 0, tzinfo=UTC))) is None


@pytest.mark.parametrize(
    ("seconds", "ms"), [(0.0, 0), (0.005, 5), (0.0051, 6), (0.0059, 6), (0.25, 250), (2.5001, 2501)]
)
def test_a_run_time_is_rounded_up_to_the_bucket_it_belongs_to(seconds: float, ms: int) -> None:
    """Cut down, a run of 5.9 ms was counted as 5 ms, in the histogram's le="0.005" bucket."""
    assert run_time_ms(seconds) == ms
