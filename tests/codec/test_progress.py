"""A stored progress reads back as a number within a float's range, and its percent never
overflows (docs/lifecycle.md, Progress)."""

from datetime import UTC, datetime

import pytest

from django_threadmill.codec.progress import Progress, stored_progress

REPORTED_AT = datetime(2026, 12, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("done", "total", "percent"),
    [
        (3, 10, 30),
        (10, 10, 100),
        (29, 100, 29),  # 29 / 100 * 100 is 28.999999999999996 in floats
        (290, 1000, 29),
        (0.29, 1, 29),  # read as written: the float Python stores is a hair below 0.29
        (0.57, 1.0, 57),
        (1e307, 1e308, 10),  # done * 100 would be inf
        (10**300, 3 * 10**300, 33),
        (5, 0, None),
        (5, None, None),
    ],
    ids=[
        "30",
        "100",
        "29 of 100",
        "290 of 1000",
        "0.29 of 1",
        "0.57 of 1.0",
        "floats near the limit",
        "big ints",
        "total 0",
        "no total",
    ],
)
def test_the_percent_is_whole_rounded_down_and_never_overflows(
    done: int | float, total: int | float | None, percent: int | None
) -> None:
    progress = Progress(done=done, total=total, note="", reported_at=REPORTED_AT)
    assert progress.percent == percent


@pytest.mark.parametrize(
    "text", ["-1", "nan", "inf", "1e999", str(10**400), "ten"], ids=lambda text: text[:8]
)
def test_a_stored_number_that_is_not_one_reads_as_unknown(text: str) -> None:
    record = {"progress_done": "1", "progress_total": text, "progress_ms": "1764633600000"}
    progress = stored_progress(record)
    assert progress is not None
    assert (progress.done, progress.total, progress.percent) == (1, None, None)
