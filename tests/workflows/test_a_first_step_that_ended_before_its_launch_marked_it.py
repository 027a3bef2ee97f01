"""A first step that ended between its launch's store and its mark reads as the step that ran:
another first step's failure in that window recorded every step not yet marked as not run, the
steps that ran included (docs/workflows.md, Semantics)."""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import advance, group, launch, step
from django_threadmill.workflows.plan import PlannedStep, step_task_id
from tests.backend_support import fail, succeed

from .support import cancelled_before_it_ran
from .tasks import boom, number

WHY = "step 1 failed: ValueError: down"


def test_steps_that_ended_before_the_launch_marked_them_are_not_recorded_as_not_run(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 0 succeeds and step 1 fails after the launch stored them and before it marked
    them; step 2, stored with them, never ran."""
    original = launch.mark_enqueued

    def ended_before_the_mark(
        source: ThreadmillTaskBackend, workflow_id: str, steps: list[PlannedStep]
    ) -> bool:
        monkeypatch.setattr(launch, "mark_enqueued", original)  # the launch's mark only
        succeeded, failed, _ = (step_task_id(workflow_id, s) for s in steps)
        succeed(backend, succeeded, 1)
        advance.advance_from(backend, succeeded)
        fail(backend, failed, ValueError("down"))
        advance.advance_from(backend, failed)
        return original(source, workflow_id, steps)

    monkeypatch.setattr(launch, "mark_enqueued", ended_before_the_mark)

    flow = group(
        step(number, 1),
        step(boom.using(queue_name="emails"), 0),
        step(number.using(queue_name="reports"), 2),
    ).enqueue()

    assert flow.status == TaskResultStatus.FAILED
    assert flow.why == WHY
    ran, failed, stored = flow.steps
    assert (ran.state, ran.not_run) == ("SUCCESSFUL", "")
    assert (failed.state, failed.not_run) == ("FAILED", "")
    assert failed.result is not None
    assert failed.result.errors[-1].traceback.strip().endswith("ValueError: down")
    assert stored.not_run == WHY
    cancelled_before_it_ran(flow, 2, f"its workflow ended ({WHY})")
