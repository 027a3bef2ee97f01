"""A note or a reason given as a lazily translated string (``gettext_lazy``, as Django code
often holds its texts) is taken as the text it stands for, by every caller of
codec/text.utf8_text.

It was refused as no str: ``report_progress(ctx, 1, 2, gettext_lazy("Sending"))`` failed its
task with "note='Sending' is a __proxy__. Pass a str.", and a cancel or pause reason so given
failed its caller.
"""

from django.utils.translation import gettext_lazy

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import TaskResultStatus
from django_threadmill.progress import progress_of
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, step
from tests.progress.tasks import plain, reports_a_translated_note
from tests.workflows.tasks import number

TEXT = "Sending the newsletter"


def test_a_translated_progress_note_is_stored_as_its_text(backend: ThreadmillTaskBackend) -> None:
    result = reports_a_translated_note.enqueue()
    drain()
    result.refresh()

    assert result.status == TaskResultStatus.SUCCESSFUL
    progress = progress_of(result)
    assert progress is not None
    assert progress.note == TEXT


def test_a_translated_cancel_reason_is_stored_as_its_text(backend: ThreadmillTaskBackend) -> None:
    result = plain.enqueue()

    assert backend.cancel(result.id, gettext_lazy(TEXT)) is True  # type: ignore[arg-type]
    result.refresh()
    assert TEXT in result.errors[-1].traceback


def test_a_translated_workflow_cancel_reason_is_taken(backend: ThreadmillTaskBackend) -> None:
    workflow = chain(step(number, 1)).enqueue()

    assert workflow.cancel(gettext_lazy(TEXT)) is True  # type: ignore[arg-type]
    assert workflow.why == f"cancelled: {TEXT}"


def test_a_translated_pause_reason_is_stored_as_its_text(backend: ThreadmillTaskBackend) -> None:
    assert backend.broker.pause("default", "ops", gettext_lazy(TEXT))  # type: ignore[arg-type]

    pause = Inspector(backend.broker).paused(["default"])["default"]
    assert pause.reason == TEXT
