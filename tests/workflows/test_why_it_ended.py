"""Why a workflow ended names the exception and the start of its message, kept short: each
step it leaves unrun holds a copy (docs/workflows.md, Semantics)."""

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.results import MAX_ERROR_TEXT_CHARS
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, group, step

from .tasks import add, boom_with, number


def ended_by(message: str) -> WorkflowResult:
    """Run a workflow whose second step raises ValueError(``message``), leaving a group of
    twenty members unrun; return it read back."""
    flow = chain(
        step(number, 1),
        step(boom_with, message),
        group(*(step(add, n) for n in range(20))),
    ).enqueue()
    assert drain() == 2
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert {s.not_run for s in flow.steps[2:]} == {flow.why}
    return flow


def test_a_message_on_several_lines_is_named_by_its_first(backend: ThreadmillTaskBackend) -> None:
    """The last line of the traceback was taken: here the caret a database error ends with."""
    flow = ended_by('relation "shop" does not exist\nLINE 1: SELECT * FROM shop\n    ^')

    assert flow.why == 'step 1 failed: ValueError: relation "shop" does not exist'


def test_a_long_message_is_cut_and_still_names_the_exception(
    backend: ThreadmillTaskBackend,
) -> None:
    """The record keeps 64 KiB of traceback; the workflow copied its last 32 KiB, a piece of
    the message without the exception's name, into each of the twenty steps it left unrun."""
    flow = ended_by("x" * 1_000_000)

    assert flow.why.startswith("step 1 failed: ValueError: xxx")
    assert "characters cut" in flow.why
    assert len(flow.why) < MAX_ERROR_TEXT_CHARS + 100
