"""``progress_of`` of a workflow's result says to pass one of its steps' results (docs/workflows.md,
The API). It said "Pass the result enqueue() returned", which is what the caller had done: a
workflow's ``enqueue()`` returns its ``WorkflowResult``."""

import asyncio
import re
from collections.abc import Callable

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.progress import aprogress_of, progress_of
from django_threadmill.workflows import WorkflowResult, chain, step

from .tasks import add, number


@pytest.mark.parametrize(
    ("call", "read"),
    [
        ("progress_of()", progress_of),
        ("aprogress_of()", lambda flow: asyncio.run(aprogress_of(flow))),
    ],
    ids=["progress_of", "aprogress_of"],
)
def test_progress_of_a_workflow_names_its_steps_results(
    backend: ThreadmillTaskBackend, call: str, read: Callable[[WorkflowResult], object]
) -> None:
    flow = chain(step(number, 1), step(add, 2)).enqueue()
    message = (
        f"{call} takes a TaskResult, not a WorkflowResult. A workflow reports no progress of "
        "its own: pass one of its steps' results, e.g. workflow.results[0] (None until that "
        "step is enqueued)."
    )

    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        read(flow)

    first = flow.results[0]
    assert first is not None
    assert progress_of(first) is None  # the step's own result reads: it reported nothing yet
