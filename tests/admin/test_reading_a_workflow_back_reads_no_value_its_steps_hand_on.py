"""Reading a workflow back reads its steps' results from their records, and not again from the
workflow's hash, which keeps each value a step hands on (``v:i``) for the drainers.

The hash was read whole: a workflow page, which reads at most ``CHECKED_BYTES`` of each step's
record, read every step's value from the hash all the same (50 steps returning 1 MB each: 50
MB a view), and ``get_workflow()`` read each value twice (docs/admin.md, Cost per page view;
docs/workflows.md, What it costs).
"""

from django.test import Client

from django_threadmill.admin import workflows as workflow_pages
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, group, step
from tests.admin.conftest import TASKS_URL, page
from tests.workflows.tasks import length, number, text_of

BIG = 200_000  # characters each step returns
STEPS = 20


def big_values() -> WorkflowResult:
    """Run a group of STEPS members returning BIG characters each, chained to a step of each."""
    flow = chain(
        step(number, 0), group(*(chain(step(text_of, BIG), step(length)) for _ in range(STEPS)))
    ).enqueue()
    drain()
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    return flow


def test_a_workflow_page_reads_no_value_of_its_steps(
    operator: Client, backend: ThreadmillTaskBackend, bytes_read: list[int]
) -> None:
    flow = big_values()
    bytes_read[0] = 0

    body = page(operator, f"{TASKS_URL}workflows/default/{flow.id}/")

    assert body.count(">SUCCESSFUL</span>") == 1 + 1 + 2 * STEPS  # the workflow, its steps
    assert bytes_read[0] < STEPS * workflow_pages.CHECKED_BYTES  # 4 MB of values before


def test_get_workflow_reads_each_result_once(
    backend: ThreadmillTaskBackend, bytes_read: list[int]
) -> None:
    flow = big_values()
    bytes_read[0] = 0

    read = get_workflow(flow.id)

    assert [r.return_value for r in read.results if r is not None][1::2] == ["x" * BIG] * STEPS
    # Each value in its step's record and in the payload of the step it is handed to; before,
    # in the hash too.
    assert bytes_read[0] < 2.2 * STEPS * BIG
