"""report_progress checks what it is given and says the fix; under another backend it checks
the same and does nothing, so portable task code may call it."""

import re
from collections.abc import Iterator

import pytest
from django.test import override_settings

from django_threadmill.compat import TaskContext, TaskResult, TaskResultStatus
from django_threadmill.progress import NOTE_MAX_CHARS, progress_of, report_progress
from tests.progress.tasks import plain, reports_unknown_total
from tests.support import django_backend

IMMEDIATE_BACKEND = django_backend("immediate.ImmediateBackend")


@pytest.fixture
def context(backend: object) -> TaskContext:
    """The context of a task enqueued to the threadmill backend (not running anywhere)."""
    return TaskContext(task_result=plain.enqueue())


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((None, 1), TypeError, "report_progress() takes the task's context first, not a NoneType"),
        (("ctx", "3"), TypeError, "report_progress() done='3' is a str, not a count or an amount"),
        (
            ("ctx", True),
            TypeError,
            "report_progress() done=True is a bool, not a count or an amount",
        ),
        (("ctx", -1), ValueError, "report_progress() done=-1 is not a finite number of 0 or more"),
        (("ctx", float("nan")), ValueError, "done=nan is not a finite number of 0 or more"),
        (("ctx", 1, float("inf")), ValueError, "total=inf is not a finite number of 0 or more"),
        (
            ("ctx", 1, "10"),
            TypeError,
            "report_progress() total='10' is a str, not a count or an amount",
        ),
        (("ctx", 11, 10), ValueError, "report_progress() done=11 is more than total=10"),
        (("ctx", 1, 2, 3), TypeError, "report_progress() note=3 is an int. Pass a str."),
        # A byte that is not UTF-8, as os.fsdecode leaves it: Redis cannot be sent it.
        (("ctx", 1, 2, "a\udcff"), ValueError, "note holds '\\udcff' at index 1, a lone"),
        # Past Python's 4,300 digits an int cannot even be formatted: it once killed the ack
        # writer, which formats what it sends.
        (("ctx", 10**5000), ValueError, "done is an int of 16610 bits, past what a float can"),
        (("ctx", 1, -(2**1100)), ValueError, "total is an int of 1101 bits, past what a float"),
    ],
)
def test_bad_arguments_are_refused_naming_the_fix(
    context: TaskContext, arguments: tuple[object, ...], error: type[Exception], message: str
) -> None:
    first, *rest = arguments
    with pytest.raises(error, match=re.escape(message)):
        report_progress(context if first == "ctx" else first, *rest)  # type: ignore[arg-type]


def test_a_note_longer_than_the_most_kept_is_refused(context: TaskContext) -> None:
    report_progress(context, 1, note="x" * NOTE_MAX_CHARS)
    with pytest.raises(ValueError, match=r"note is 201 characters long; at most 200 are kept"):
        report_progress(context, 1, note="x" * (NOTE_MAX_CHARS + 1))


def test_a_context_no_worker_runs_reports_nothing(context: TaskContext) -> None:
    report_progress(context, 1, 2, "nobody listens")
    assert progress_of(context.task_result) is None


@pytest.fixture
def immediate(redis_url: str) -> Iterator[None]:
    with override_settings(TASKS={"default": {"BACKEND": IMMEDIATE_BACKEND}}):
        yield


@pytest.mark.usefixtures("immediate")
def test_under_the_immediate_backend_a_report_does_nothing() -> None:
    result: TaskResult = reports_unknown_total.enqueue(2.5)

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert progress_of(result) is None


@pytest.mark.usefixtures("immediate")
def test_under_the_immediate_backend_bad_arguments_still_fail_the_task() -> None:
    result = reports_unknown_total.enqueue(-1.0)

    assert result.status == TaskResultStatus.FAILED
    assert "done=-1.0 is not a finite number of 0 or more" in result.errors[0].traceback
