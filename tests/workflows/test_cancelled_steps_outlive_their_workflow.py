"""A cancelled workflow's hash expires ``result_ttl`` after the cancel, and a step a worker held
then (reserved ahead, or running) may wait longer than that: in a busy worker's buffer, or for
its retry. It must still never run, nor be requeued (docs/workflows.md, Cancel)."""

from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import StepOfCancelledWorkflow
from django_threadmill.testing import drain
from django_threadmill.worker.cancelled_steps import CancelledSteps
from django_threadmill.workflows import WorkflowResult, chain, group, step
from tests.backend_support import WORKER
from tests.support import Command, run_to_completion

from .support import NOT_RUN, reserved_while_stored
from .tasks import add, boom, cancels_its_workflow_which_expires, counted, number


def expire(backend: ThreadmillTaskBackend, flow: WorkflowResult) -> None:
    """Delete ``flow``'s hash, as ``result_ttl`` passing after it ended does."""
    assert backend.broker.client.delete(backend.broker.keyspace.workflow(flow.id)) == 1


def cancelled_for(backend: ThreadmillTaskBackend, task_id: str, why: str) -> TaskResult:
    """Check that step ``task_id`` ended cancelled before it ran, for ``why``; return it."""
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].traceback.strip().endswith(f"Cancelled before it ran: {why}")
    return result


def test_a_step_in_a_workers_buffer_does_not_start_after_its_cancelled_workflow_expired(
    backend: ThreadmillTaskBackend, start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    """It read the workflow's hash before it started the step, found none, and ran it."""
    log = tmp_path / "runs.log"
    # One runner, and a read-ahead of four: one acquire reserves both members, and the second
    # waits in the buffer while the first cancels the workflow and its hash expires.
    flow = group(
        step(cancels_its_workflow_which_expires, str(log)), step(counted, 2, str(log))
    ).enqueue()

    run_to_completion(start_worker("--threads", "1", "--burst"))

    assert log.read_text().splitlines() == ["cancels"]
    why = "its workflow was cancelled: from a step"
    second = cancelled_for(backend, flow.steps[1].task_id, why)
    assert second.worker_ids  # stopped by the worker that held it
    with pytest.raises(StepOfCancelledWorkflow, match="which was cancelled \\(cancelled: from a"):
        backend.requeue(second.id)


def test_a_failing_step_gets_no_retry_after_its_cancelled_workflow_expired(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    """Its retry policy asked for an hour later; the look at its workflow found no hash and
    scheduled the retry, which ran as a step of no workflow."""
    log = tmp_path / "runs.log"
    flow = chain(
        step(cancels_its_workflow_which_expires, str(log), fail=True), step(add, 1)
    ).enqueue()

    assert drain(wait_for_delayed=0) == 1

    first = backend.get_result(flow.steps[0].task_id)
    assert (first.status, len(first.errors)) == (TaskResultStatus.FAILED, 1)
    assert first.errors[0].exception_class_path == "builtins.ValueError"
    assert backend.broker.client.zcard(backend.broker.queue_keys("default").delayed) == 0


def test_a_reserved_step_of_a_cancelled_workflow_stops_after_the_workflow_expired(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()
    [held, _] = backend.broker.acquire("default", 4).reservations  # a worker's read-ahead
    assert flow.cancel("by hand")
    expire(backend, flow)

    stopped = CancelledSteps(backend.broker).cancellation(held)

    assert stopped is not None, "the worker would start it"
    assert backend.broker.finish(WORKER, [stopped]) == []
    cancelled_for(backend, held.lease.task_id, "its workflow was cancelled: by hand")


def test_a_reserved_step_its_workflow_recorded_as_not_run_stops_after_the_workflow_expired(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    flow, reservation = reserved_while_stored(backend, monkeypatch)
    expire(backend, flow)

    stopped = CancelledSteps(backend.broker).cancellation(reservation)

    assert stopped is not None, "the worker would start it"
    assert backend.broker.finish(WORKER, [stopped]) == []
    cancelled_for(backend, reservation.lease.task_id, f"its workflow ended ({NOT_RUN})")


def test_a_reserved_step_of_a_workflow_that_failed_still_runs_after_it_expired(
    backend: ThreadmillTaskBackend,
) -> None:
    """A failure stops nothing enqueued (docs/workflows.md, Semantics): only a stop the
    workflow gave the step itself keeps it from running."""
    flow = group(step(boom.using(queue_name="emails"), 1), step(number, 2)).enqueue()
    [held] = backend.broker.acquire("default", 4).reservations
    assert drain(queues=["emails"]) == 1
    flow.refresh()
    assert flow.why == "step 0 failed: ValueError: boom after 1"
    expire(backend, flow)

    assert CancelledSteps(backend.broker).cancellation(held) is None
