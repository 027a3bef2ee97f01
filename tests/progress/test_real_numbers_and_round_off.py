"""report_progress takes any real number, and a done past total by a float's round-off only.

Before, a Decimal or a numpy int was refused as "… is a Decimal, not a number", and a task
counting in floats (0.1 + 0.2 of 0.3) failed on "done is more than total"
(docs/lifecycle.md, Progress)."""

import numbers
import re
from decimal import Decimal
from fractions import Fraction

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Lease, ProgressReport
from django_threadmill.compat import TaskContext, TaskResult, TaskResultStatus
from django_threadmill.progress import progress_of, report_progress
from django_threadmill.progress.channels import open_channel
from django_threadmill.testing import drain
from tests.progress.tasks import plain, reports_as


class NumpyLikeInt:
    """An integer that is no int, as numpy's int64 is: registered as numbers.Integral."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value


numbers.Integral.register(NumpyLikeInt)


class Sink:
    def __init__(self) -> None:
        self.reports: list[ProgressReport] = []

    def put(self, report: ProgressReport) -> None:
        self.reports.append(report)


def reported(done: object, total: object) -> tuple[object, object]:
    """Report ``done`` of ``total`` from a running attempt; return what reached the worker."""
    attempt: TaskResult = plain.enqueue()
    sink = Sink()
    with open_channel(attempt, Lease(task_id=attempt.id, queue="default", token="1"), sink):
        report_progress(TaskContext(task_result=attempt), done, total)  # type: ignore[arg-type]
    [report] = sink.reports
    return report.done, report.total


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    ("done", "total", "sent"),
    [
        (Decimal("2.5"), Decimal(10), (2.5, 10.0)),
        (Fraction(1, 3), Fraction(1), (1 / 3, 1.0)),
        (NumpyLikeInt(3), NumpyLikeInt(4), (3, 4)),  # an integral one stays an int
        (1, 3.0, (1, 3.0)),
    ],
)
def test_any_real_number_is_taken_an_integral_one_as_an_int(
    done: object, total: object, sent: tuple[object, object]
) -> None:
    got = reported(done, total)
    assert got == sent
    assert [type(number) for number in got] == [type(number) for number in sent]


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    ("done", "total"),
    [(0.1 + 0.2, 0.3), (3, 2.9999999999999996), (Fraction(3, 10), 0.3 - 1e-17)],
)
def test_a_done_past_total_by_round_off_is_reported_as_total(done: object, total: object) -> None:
    assert reported(done, total) == (total, total)


@pytest.mark.parametrize(
    ("done", "total", "message"),
    [
        (0.31, 0.3, "report_progress() done=0.31 is more than total=0.3. Pass the total"),
        (10**12 + 1, 10**12, "done=1000000000001 is more than total=1000000000000"),  # exact
        (Decimal("1e400"), 1, "done is a Decimal, past what a float can hold (1.8e+308)."),
        (1, Fraction(10**400), "total is a Fraction, past what a float can hold (1.8e+308)."),
        (Decimal("NaN"), None, "done=nan is not a finite number of 0 or more"),
        (Decimal("-Infinity"), None, "done=-inf is not a finite number of 0 or more"),
        (Fraction(-1, 2), None, "done=-0.5 is not a finite number of 0 or more"),
    ],
)
def test_a_real_overshoot_or_a_number_past_a_float_is_still_refused(
    backend: ThreadmillTaskBackend, done: object, total: object, message: str
) -> None:
    context = TaskContext(task_result=plain.enqueue())
    with pytest.raises(ValueError, match=re.escape(message)):
        report_progress(context, done, total)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "done", "total", "read_back"),
    [
        ("float", repr(0.1 + 0.2), "0.3", (0.3, 0.3)),
        ("Decimal", "2.5", "10", (2.5, 10.0)),
        ("Fraction", "1/4", "1", (0.25, 1.0)),
    ],
)
def test_a_task_reporting_them_succeeds_and_its_report_reads_back(
    backend: ThreadmillTaskBackend,
    kind: str,
    done: str,
    total: str,
    read_back: tuple[float, float],
) -> None:
    result = reports_as.enqueue(kind, done, total)
    drain()
    result.refresh()

    assert result.status == TaskResultStatus.SUCCESSFUL
    progress = progress_of(result)
    assert progress is not None
    assert (progress.done, progress.total) == read_back
