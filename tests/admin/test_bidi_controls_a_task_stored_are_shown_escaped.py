"""Unicode bidi controls a task stored (in its arguments, its error, its progress note) are
shown escaped on the admin's pages, as the escapes of their UTF-8 bytes (``\\xe2\\x80\\xae``).

HTML escaping leaves them as they are, and a browser obeys them: a right-to-left override in a
progress note turned the report's time after it around in the task list ("at 14:02:31" read
"13:20:41 ta"), and one in an error reversed what the operator read of it. Anyone who can
enqueue a task, or make one fail with their input, could make a page say what it did not.
"""

from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.admin.conftest import TASKS_URL, detail_url, page
from tests.admin.test_a_pause_reason_with_bidi_controls_is_shown_escaped import BIDI
from tests.admin.test_progress_bar import reporting_task
from tests.backend_support import fail

OVERRIDE = "\u202e"
SHOWN = "\\xe2\\x80\\xae"


def test_bidi_controls_in_arguments_errors_and_notes_are_shown_escaped(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed = echo.enqueue(f"invoice {OVERRIDE}fdp.exe").id
    fail(backend, failed, ValueError(f"refund {OVERRIDE}00.001$ \u2067done\u2069"))
    noted = reporting_task(backend, 3, 10, f"rows {OVERRIDE}imported")

    pages = [page(operator, url) for url in (TASKS_URL, detail_url(failed), detail_url(noted))]

    for text in pages:
        assert not [char for char in BIDI if char in text]
    listing, failure, progress = pages
    assert f"invoice {SHOWN}fdp.exe" in failure
    assert f"ValueError: refund {SHOWN}00.001$ \\xe2\\x81\\xa7done\\xe2\\x81\\xa9" in failure
    assert f"rows {SHOWN}imported" in listing
    assert f"rows {SHOWN}imported" in progress
