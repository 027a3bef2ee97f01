"""A progress note or a cancel reason that is no str is named cut short (wording.shown), with
the fix, by every caller of codec/text.utf8_text.

It was echoed whole: ``report_progress(ctx, 1, 2, b"y" * 100_000)`` failed its task with a
message of 100,000 characters more, written into the result's error and the worker's "Task
failed" line on every attempt; ``cancel()`` and ``WorkflowResult.cancel()`` given such a
reason (bytes read from a request, a list of a million lines) did the same to their caller; an
int past Python's 4,300 digits could not be written at all, and raised a bare "Exceeds the
limit (4300 digits) for integer string conversion" in place of the refusal.
"""

from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskContext
from django_threadmill.progress import report_progress
from django_threadmill.workflows import chain, step
from tests.progress.tasks import plain
from tests.workflows.tasks import number

BYTES = b"y" * 100_000
CUT_BYTES = f"b'{'y' * 46}...{'y' * 48}'"

type Call = Callable[[ThreadmillTaskBackend, object], object]


def note(backend: ThreadmillTaskBackend, value: object) -> None:
    context = TaskContext(task_result=plain.enqueue())
    report_progress(context, 1, 2, value)  # type: ignore[arg-type]


def cancel(backend: ThreadmillTaskBackend, value: object) -> object:
    return backend.cancel(plain.enqueue().id, value)  # type: ignore[arg-type]


def cancel_workflow(backend: ThreadmillTaskBackend, value: object) -> object:
    return chain(step(number, 1)).enqueue().cancel(value)  # type: ignore[arg-type]


CALLS: list[tuple[Call, str]] = [
    (note, "report_progress() note"),
    (cancel, "cancel() reason"),
    (cancel_workflow, "WorkflowResult.cancel() reason"),
]


@pytest.mark.parametrize(("call", "what"), CALLS, ids=[what for _, what in CALLS])
@pytest.mark.parametrize(
    ("value", "said"),
    [
        (BYTES, f"{CUT_BYTES} is a bytes"),
        (["line"] * 1_000_000, "['line', 'line', 'line', 'line', 'line', 'line', ...] is a list"),
        (10**5000, "an int of about 5000 digits is an int"),
    ],
    ids=["bytes of 100,000", "a list of a million", "an int of 5000 digits"],
)
def test_the_value_is_named_cut_short_with_the_fix(
    backend: ThreadmillTaskBackend, call: Call, what: str, value: object, said: str
) -> None:
    with pytest.raises(TypeError) as refused:
        call(backend, value)

    assert str(refused.value) == f"{what}={said}. Pass a str."


@pytest.mark.parametrize(("call", "what"), CALLS, ids=[what for _, what in CALLS])
def test_a_short_value_is_still_named_whole(
    backend: ThreadmillTaskBackend, call: Call, what: str
) -> None:
    with pytest.raises(TypeError) as refused:
        call(backend, b"why")

    assert str(refused.value) == f"{what}=b'why' is a bytes. Pass a str."
