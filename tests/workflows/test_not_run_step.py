"""A step the workflow recorded as not run does not start, even one a worker reserved while a
drainer was storing it: another step's failure ended the workflow in between, and the drainer's
cancel could not reach the step in its queue (docs/workflows.md, Semantics)."""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import StepOfCancelledWorkflow
from django_threadmill.testing import drain

from .support import NOT_RUN, cancelled_before_it_ran, reserved_while_stored, stop_before_it_starts


def test_a_reserved_step_the_workflow_recorded_as_not_run_does_not_start(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's look before a step starts read only a cancel: it ran the step."""
    flow, reservation = reserved_while_stored(backend, monkeypatch)
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.steps[1].not_run == NOT_RUN

    stop_before_it_starts(backend, reservation)

    cancelled_before_it_ran(flow, 1, f"its workflow ended ({NOT_RUN})")
    drain()  # advances from the step's end: the workflow keeps what it recorded
    flow.refresh()
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "FAILED", "FAILED"]
    assert flow.why == NOT_RUN


def test_a_step_the_workflow_recorded_as_not_run_is_not_requeued(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow, reservation = reserved_while_stored(backend, monkeypatch)
    stop_before_it_starts(backend, reservation)
    task_id = flow.steps[1].task_id

    with pytest.raises(StepOfCancelledWorkflow) as refused:
        backend.requeue(task_id)

    assert str(refused.value) == (
        f"Task {task_id} was not requeued: it is step 1 of workflow {flow.id}, which ended "
        f"without it ({NOT_RUN}), and a worker starts no step its workflow recorded as not "
        "run. Enqueue the task anew to run it."
    )
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED
