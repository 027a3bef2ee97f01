"""What chains and groups pass along, and where they stop, with the steps run in the test's
thread by django_threadmill.testing.drain (the broker, scripts and outboxes are the real ones)."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.exceptions import StepOfCancelledWorkflow, WorkflowDoesNotExist
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, advance, chain, get_workflow, group, step
from django_threadmill.workflows.launch import enqueue_steps, step_task
from django_threadmill.workflows.plan import stored_plan
from tests.backend_support import fail as record_failure

from .support import cancelled_before_it_ran
from .tasks import (
    add,
    boom,
    cancels_its_workflow,
    cancels_its_workflow_then_fails,
    collect,
    counted,
    number,
)


def test_a_chain_passes_each_value_to_the_next_step(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 1), step(add, 10), step(add, 100)).enqueue()
    assert flow.status == TaskResultStatus.READY
    assert [s.state for s in flow.steps] == ["READY", "WAITING", "WAITING"]

    assert drain() == 3

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results if r is not None] == [1, 11, 111]
    assert [r.args for r in flow.results if r is not None] == [[1], [1, 10], [11, 100]]


def test_a_group_callback_gets_every_value_in_member_order(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = group(*(step(number, n) for n in range(100)), then=step(collect)).enqueue()

    assert drain() == 101

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    callback = flow.results[-1]
    assert callback is not None
    assert callback.return_value == list(range(100))


def test_chains_and_groups_compose(backend: ThreadmillTaskBackend) -> None:
    flow = chain(
        step(number, 1),
        group(step(add, 1), chain(step(add, 2), step(add, 3))),
        step(collect),
    ).enqueue()

    drain()

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [2, 6]


def test_a_chain_stops_at_the_step_that_failed(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 1), step(boom), step(add, 1), step(add, 2)).enqueue()

    assert drain() == 2

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "FAILED", "NOT_RUN", "NOT_RUN"]
    assert flow.why == "step 1 failed: ValueError: boom after 1"
    assert flow.steps[2].not_run == flow.why


def test_a_group_whose_member_failed_never_calls_back(backend: ThreadmillTaskBackend) -> None:
    flow = group(step(number, 1), chain(step(number, 2), step(boom)), then=step(collect)).enqueue()

    drain()

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.steps[-1].state == "NOT_RUN"


def test_a_cancelled_workflow_enqueues_nothing_further(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()

    assert flow.cancel("not needed")

    assert drain() == 0
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
    assert flow.why == "cancelled: not needed"
    assert not flow.cancel()  # it has ended


def test_cancelling_a_workflow_that_failed_leaves_its_waiting_steps_alone(
    backend: ThreadmillTaskBackend,
) -> None:
    """A failure stops nothing already enqueued, and a cancel after it changes nothing: the
    member still waiting in its queue stays READY, and runs."""
    flow = group(step(boom, 1), step(number.using(queue_name="emails"), 2)).enqueue()
    assert drain(queues=["default"]) == 1  # the failure; the member on "emails" waits

    assert not flow.cancel("too late")

    assert flow.status == TaskResultStatus.FAILED
    assert flow.why == "step 0 failed: ValueError: boom after 1"
    waiting = flow.results[1]
    assert waiting is not None
    assert waiting.status == TaskResultStatus.READY
    assert drain() == 1
    flow.refresh()
    assert [s.state for s in flow.steps] == ["FAILED", "SUCCESSFUL"]


def test_a_cancel_again_cancels_the_steps_an_interrupted_one_left_waiting(
    backend: ThreadmillTaskBackend,
) -> None:
    """A cancel that recorded the workflow cancelled and died before it cancelled the steps
    waiting in a queue: cancelling again returns False (it had ended) and cancels them."""
    flow = group(step(number, 1), step(number, 2)).enqueue()
    backend.broker.cancel_workflow(flow.id, "cancelled: first")

    assert not flow.cancel("again")

    assert [s.state for s in flow.steps] == ["FAILED", "FAILED"]
    assert flow.why == "cancelled: first"
    cancelled_before_it_ran(flow, 0, "its workflow was cancelled: first")


def test_a_requeued_step_of_a_failed_workflow_runs(backend: ThreadmillTaskBackend) -> None:
    """The workflow stays FAILED; the step's task runs again (docs/workflows.md, Semantics)."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.results[0]
    assert first is not None
    record_failure(backend, first.id, ValueError("down"))
    assert drain() == 0  # the drain advances the workflow: FAILED, step 1 not run

    assert backend.requeue(first.id)
    assert drain() == 1

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "NOT_RUN"]


def test_a_step_of_a_cancelled_workflow_is_not_requeued(backend: ThreadmillTaskBackend) -> None:
    """Requeued, it answered True and was recorded FAILED again by the worker's look before it
    started (its workflow was cancelled): a promise of a run that never came."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.results[0]
    assert first is not None
    assert flow.cancel("not needed")

    with pytest.raises(StepOfCancelledWorkflow) as refused:
        backend.requeue(first.id)

    assert str(refused.value) == (
        f"Task {first.id} was not requeued: it is step 0 of workflow {flow.id}, which was "
        "cancelled (cancelled: not needed), and a worker starts no step of a cancelled "
        "workflow. Enqueue the task anew to run it."
    )
    assert backend.get_result(first.id).status == TaskResultStatus.FAILED
    assert drain() == 0


def cancel_before(monkeypatch: pytest.MonkeyPatch, name: str, flow: WorkflowResult) -> None:
    """Make the drainer's ``advance.<name>`` cancel ``flow`` ("meanwhile") before it runs."""
    original = getattr(advance, name)

    def cancelled_first(*args: object) -> None:
        flow.cancel("meanwhile")
        original(*args)

    monkeypatch.setattr(advance, name, cancelled_first)


def test_a_cancel_just_after_a_step_became_due_keeps_it_from_running(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel lands between advance.lua making step 1 due and the drainer enqueueing it."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    cancel_before(monkeypatch, "enqueue_due", flow)

    assert drain() == 1

    flow.refresh()
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "NOT_RUN"]
    assert flow.steps[1].not_run == "cancelled: meanwhile"


def test_a_step_the_workflow_recorded_as_not_run_while_it_was_stored_is_cancelled(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel lands after the drainer read the workflow open, before it stored step 1:
    the cancel's own look finds nothing to cancel, the drainer's mark finds it not run."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    cancel_before(monkeypatch, "enqueue_steps", flow)

    assert drain() == 1  # step 1 is stored, then cancelled before it runs

    cancelled_before_it_ran(flow, 1, "its workflow ended (cancelled: meanwhile)")


def test_cancelling_a_workflow_that_expired_says_it_had_ended(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    drain()
    backend.broker.client.delete(backend.broker.keyspace.workflow(flow.id))  # result_ttl passed

    assert not flow.cancel()


def test_a_step_whose_record_expired_reads_as_it_ended_while_the_workflow_is_open(
    backend: ThreadmillTaskBackend,
) -> None:
    later = add.using(run_after=timezone.now() + timedelta(hours=1))
    flow = chain(step(number, 1), step(later, 1)).enqueue()
    assert drain(wait_for_delayed=0) == 1
    # The first step's record expires (result_ttl) before the delayed one runs.
    first = flow.steps[0].task_id
    backend.broker.client.delete(backend.broker.queue_keys("default").record(first))

    flow.refresh()

    assert flow.status == TaskResultStatus.RUNNING
    assert flow.results[0] is None
    assert [s.state for s in flow.steps] == ["SUCCESSFUL", "READY"]


def test_get_workflow_reads_it_back(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 5), step(add, 1)).enqueue()
    drain()

    found = get_workflow(flow.id)

    assert found.status == TaskResultStatus.SUCCESSFUL
    assert [s.task_id for s in found.steps] == [s.task_id for s in flow.steps]
    with pytest.raises(WorkflowDoesNotExist, match="has no workflow 'nope'"):
        get_workflow("nope")


async def test_aenqueue_stores_the_same_workflow(backend: ThreadmillTaskBackend) -> None:
    flow = await chain(step(number, 1), step(add, 1)).aenqueue()
    assert [s.state for s in flow.steps] == ["READY", "WAITING"]


def test_a_step_queue_follows_the_task_options(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number.using(queue_name="emails", priority=5), 1), step(add, 1)).enqueue()
    assert flow.steps[0].queue == "emails"
    assert flow.steps[0].task_id.endswith("@emails")
    assert flow.results[0] is not None
    assert flow.results[0].task.priority == 5


def test_a_later_step_with_a_whole_float_priority_runs(backend: ThreadmillTaskBackend) -> None:
    # Its plan stored 5.0, which the step's enqueue refused to read back as a priority.
    flow = chain(step(number, 1), step(add.using(priority=5.0), 10)).enqueue()  # type: ignore[arg-type]
    planned = stored_plan(flow.id, backend.broker.workflow_fields(flow.id))[1]
    assert (planned.priority, type(planned.priority)) == (5, int)
    assert drain() == 2
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert flow.results[1] is not None
    assert (flow.results[1].return_value, flow.results[1].task.priority) == (11, 5)


def test_each_step_is_announced_once_by_the_call_that_stored_it(
    backend: ThreadmillTaskBackend, enqueued: list[tuple[type, TaskResult]]
) -> None:
    """task_enqueued goes out for a workflow's first steps when it is enqueued, and for each
    later step when a drainer stores it; a repeated advance finds its steps stored and
    announces none again."""
    flow = chain(step(number, 1), group(step(add, 1), step(add, 2))).enqueue()
    first = flow.results[0]
    assert first is not None
    assert [result.id for _, result in enqueued] == [first.id]

    drain()
    flow.refresh()
    ids = [result.id for result in flow.results if result is not None]
    assert len(ids) == 3
    assert sorted(result.id for _, result in enqueued) == sorted(ids)
    assert {sender for sender, _ in enqueued} == {type(backend)}
    assert {result.status for _, result in enqueued} == {TaskResultStatus.READY}

    planned = stored_plan(flow.id, backend.broker.workflow_fields(flow.id))[0]
    again = step_task(backend, flow.id, planned, number, planned.args)
    # as a drainer that died would repeat it
    enqueue_steps(backend, flow.id, {planned.queue: [again]}, [planned])
    assert len(enqueued) == 3


def test_a_receiver_that_raises_hears_every_step_of_a_workflow_left_whole(
    backend: ThreadmillTaskBackend, enqueued: list[tuple[type, TaskResult]]
) -> None:
    """A task_enqueued receiver that raises makes the launch raise, as a lone enqueue does,
    but only once the workflow counts its first steps enqueued and each was announced."""

    def raises(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        raise RuntimeError("metrics service down")

    task_enqueued.connect(raises)
    try:
        with pytest.raises(RuntimeError, match="metrics service down"):
            group(step(number, 1), step(number, 2), then=step(collect)).enqueue()
    finally:
        task_enqueued.disconnect(raises)
    assert len(enqueued) == 2  # the second member was announced after the first one's error
    (workflow_id,) = backend.broker.recent_workflows(1)
    flow = get_workflow(workflow_id)
    assert [s.state for s in flow.steps] == ["READY", "READY", "WAITING"]
    drain()
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    callback = flow.results[2]
    assert callback is not None
    assert callback.return_value == [1, 2]


def test_drain_advances_a_workflow_from_a_step_cancelled_outside_it(
    backend: ThreadmillTaskBackend,
) -> None:
    """A step cancelled by hand (the admin, a web process) leaves an outbox entry that no
    finish of the drain noted: the drain still advances its workflow, as a worker's look does."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.results[0]
    assert first is not None
    assert backend.cancel(first.id, "by hand")

    assert drain() == 0

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
    assert not backend.broker.parts_with_outbox(["default"])


def test_a_step_reserved_before_its_workflow_was_cancelled_does_not_start(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    """The drain reserves both members at once, as a worker's read-ahead does: the cancel
    cannot reach the second in its queue, so it is stopped where it would have started."""
    log = tmp_path / "runs.log"
    flow = group(step(cancels_its_workflow, str(log)), step(counted, 2, str(log))).enqueue()

    assert drain() == 1

    cancelled_before_it_ran(flow, 1, "its workflow was cancelled: from a step")
    assert log.read_text().splitlines() == ["cancels"]
    assert flow.status == TaskResultStatus.FAILED


def test_a_step_whose_workflow_was_cancelled_is_not_tried_again(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    """A running step finishes, and its retry policy gives it no more attempts: it ends
    FAILED with its own error, no retry scheduled."""
    log = tmp_path / "runs.log"
    flow = chain(step(cancels_its_workflow_then_fails, str(log)), step(add, 1)).enqueue()

    drain()

    flow.refresh()
    assert log.read_text().splitlines() == ["cancels and fails"]
    first = flow.results[0]
    assert first is not None
    assert first.status == TaskResultStatus.FAILED
    assert [error.exception_class_path.rpartition(".")[2] for error in first.errors] == [
        "ValueError"
    ]
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
