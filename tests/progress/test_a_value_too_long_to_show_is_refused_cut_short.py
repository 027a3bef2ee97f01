"""report_progress refuses a value too long to show with its error, the value cut short
(wording.shown), as every other bad argument is refused.

The value was echoed whole: a done of a 100,000-character str failed its task with 100,000
characters of message, written into the result's error and the worker's "Task failed" log line
on every attempt; an int of a few hundred digits (within a float's range, so taken as a number)
was written out digit by digit.
"""

import pytest

from django_threadmill.compat import TaskContext
from django_threadmill.progress import report_progress
from tests.progress.tasks import plain


@pytest.fixture
def context(backend: object) -> TaskContext:
    """The context of a task enqueued to the threadmill backend (not running anywhere)."""
    return TaskContext(task_result=plain.enqueue())


@pytest.mark.parametrize(
    ("done", "total", "error", "message"),
    [
        (
            "7" * 100_000,
            None,
            TypeError,
            f"report_progress() done='{'7' * 47}...{'7' * 48}' is a str, not a count or an amount.",
        ),
        (
            1,
            [10] * 100_000,
            TypeError,
            "report_progress() total=[10, 10, 10, 10, 10, 10, ...] is a list, not a count or an "
            "amount.",
        ),
        (
            -(2**1000),
            None,
            ValueError,
            "report_progress() done=an int of about 301 digits is not a finite number of 0 or "
            "more.",
        ),
        (
            10**300,
            10**299,
            ValueError,
            "report_progress() done=an int of about 300 digits is more than total=an int of "
            "about 299 digits.",
        ),
    ],
    ids=["a long str", "a long list", "a negative int of 301 digits", "ints past each other"],
)
def test_the_value_is_named_cut_short_with_the_fix(
    context: TaskContext, done: object, total: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        report_progress(context, done, total)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message)
    assert len(str(raised.value)) < 300
