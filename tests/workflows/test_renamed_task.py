"""A step whose task path no longer imports (its module was renamed or deleted after the
workflow was enqueued) leaves its workflow readable and cancellable: that step reads with its
state and id, and why its result cannot be read (docs/workflows.md, The API)."""

import re

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, get_workflow, group, step

from .support import GONE_PATH, renamed_away
from .tasks import add, number

DOES_NOT_IMPORT = (
    rf"^Task path {re.escape(repr(GONE_PATH))} does not import \(.+\)\. Deploy the code that "
    r"defines it and restart the workers, which import a task's module once, or cancel the "
    r"task\.$"
)


def test_a_step_whose_task_no_longer_imports_reads_with_its_state(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = group(step(number, 1), chain(step(number, 2), step(add, 1))).enqueue()
    renamed_away(backend, flow, 0)

    found = get_workflow(flow.id)

    gone, other, waiting = found.steps
    assert (gone.task_id, gone.task_path, gone.queue) == (
        flow.steps[0].task_id,
        GONE_PATH,
        "default",
    )
    assert (gone.state, gone.task_status, gone.result) == ("READY", TaskResultStatus.READY, None)
    assert re.match(DOES_NOT_IMPORT, gone.unreadable)
    assert other.result is not None
    assert (other.state, other.unreadable, other.result.args) == ("READY", "", [2])
    assert waiting.state == "WAITING"
    assert found.status == TaskResultStatus.READY


def test_refresh_reads_a_step_that_ran_before_its_task_was_renamed(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    assert drain() == 2
    renamed_away(backend, flow, 0)

    flow.refresh()

    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "SUCCESSFUL"]
    assert flow.results[0] is None
    assert flow.results[1] is not None
    assert flow.results[1].return_value == 2


def test_cancel_cancels_every_waiting_step_one_whose_task_no_longer_imports_too(
    backend: ThreadmillTaskBackend,
) -> None:
    """It recorded the workflow cancelled, then raised while it read it back, before it
    cancelled any step: the others ran after the cancel."""
    flow = group(step(number, 1), step(number, 2)).enqueue()
    renamed_away(backend, flow, 0)

    assert flow.cancel("renamed")

    assert flow.why == "cancelled: renamed"
    assert [s.state for s in flow.steps] == ["FAILED", "FAILED"]
    gone = backend.broker.record(flow.steps[0].task_id)
    assert gone is not None
    assert gone["state"] == "failed"
    assert "Cancelled before it ran: its workflow was cancelled: renamed" in gone["error:1"]
    other = flow.results[1]
    assert other is not None
    assert (
        other.errors[-1]
        .traceback.strip()
        .endswith("Cancelled before it ran: its workflow was cancelled: renamed")
    )
    assert drain() == 0
