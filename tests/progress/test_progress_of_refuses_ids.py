"""progress_of refuses what is not a TaskResult with the fix, rather than an AttributeError."""

import re

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.progress import progress_of
from tests.progress.tasks import plain


@pytest.mark.parametrize(
    ("given", "kind"), [("id", "a str"), (None, "a NoneType"), ({"id": "x"}, "a dict")]
)
def test_progress_of_a_task_id_is_refused_naming_the_fix(
    backend: ThreadmillTaskBackend, given: object, kind: str
) -> None:
    # An id is what a view keeps between requests: it once met "'str' object has no attribute
    # 'backend'", which says nothing of what to pass.
    task_id = plain.enqueue().id
    value = task_id if given == "id" else given
    message = (
        f"progress_of() takes a TaskResult, not {kind}. Pass the result enqueue() returned, or "
        "the_task.get_result(id) for an id."
    )
    with pytest.raises(TypeError, match=re.escape(message)):
        progress_of(value)  # type: ignore[arg-type]
