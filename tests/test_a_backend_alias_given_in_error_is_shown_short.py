"""A backend alias given in error is shown short in the error naming the aliases that do.

``TASKS has no backend …`` echoed the whole alias: one of 10,000 characters filled the message
(and every log line that carried it), and an int of 5,000 digits given as an alias raised
Python's own "Exceeds the limit (4300 digits) for integer string conversion" in place of the
TypeError naming the fix.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from django_threadmill.workflows import get_workflow

WORKFLOW_ID = "0" * 32


def test_an_alias_of_ten_thousand_characters_is_shown_by_its_start(
    backend: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(ImproperlyConfiguredThreadmill) as refused:
        get_workflow(WORKFLOW_ID, backend="x" * 10_000)

    assert str(refused.value) == (
        f"TASKS has no backend '{'x' * 47}...{'x' * 48}'. Use an alias of a "
        "ThreadmillTaskBackend in TASKS ('default')."
    )


def test_an_int_too_long_to_write_is_named_by_its_size(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(TypeError) as refused:
        get_workflow(WORKFLOW_ID, backend=10**5000)  # type: ignore[arg-type]

    assert str(refused.value) == (
        "A backend is named by its alias in TASKS, a str, not an int: an int of about 5000 "
        "digits. Pass e.g. 'default'."
    )
