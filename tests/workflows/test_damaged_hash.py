"""A workflow hash that something other than django-threadmill wrote into, or a step whose task
no longer imports: the step that cannot be enqueued ends the workflow as failed, naming why, and
reading a damaged workflow back raises a PayloadError that says what is wrong. A drainer never
stops on either."""

import json

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import PayloadError
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, step
from django_threadmill.workflows.advance import enqueue_due

from .tasks import add, boom, number

DAMAGED = "something other than django-threadmill wrote the workflow's hash"


def two_steps(backend: ThreadmillTaskBackend) -> tuple[WorkflowResult, str]:
    """A chain of two steps, and the key of its hash."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    return flow, backend.broker.keyspace.workflow(flow.id)


def why_it_failed(backend: ThreadmillTaskBackend, flow: WorkflowResult) -> str:
    fields = backend.broker.workflow_fields(flow.id)
    assert fields["status"] == "failed"
    return fields["why"]


def test_a_step_that_is_not_a_step_fails_the_workflow_and_the_drain_goes_on(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow, key = two_steps(backend)
    backend.broker.client.hset(key, "p:1", "{not json")
    other, _ = two_steps(backend)

    drain()

    why = why_it_failed(backend, flow)
    assert why.startswith(f"step 1 failed: not enqueued: Step 1 of workflow {flow.id!r} is missing")
    assert DAMAGED in why
    assert "Workflow step cannot be enqueued, the workflow fails" in caplog.text
    assert backend.get_result(flow.steps[0].task_id).status == TaskResultStatus.SUCCESSFUL
    other.refresh()
    assert other.status == TaskResultStatus.SUCCESSFUL


def test_a_step_whose_module_raises_at_import_fails_the_workflow_and_the_drain_goes_on(
    backend: ThreadmillTaskBackend,
) -> None:
    flow, key = two_steps(backend)
    stored = json.loads(backend.broker.client.hget(key, "p:1"))
    stored["path"] = "tests.raises_at_import.task"  # a bad deploy, not bad data
    backend.broker.client.hset(key, "p:1", json.dumps(stored))
    other, _ = two_steps(backend)

    drain()

    assert why_it_failed(backend, flow) == (
        "step 1 failed: not enqueued: Task path 'tests.raises_at_import.task' does not "
        "import (its module raised RuntimeError: settings.PAYMENT_API_KEY is not set). Deploy "
        "the code that defines it and restart the workers, which import a task's module once, "
        "or cancel the task."
    )
    other.refresh()
    assert other.status == TaskResultStatus.SUCCESSFUL


def test_a_step_count_that_is_not_a_number_changes_nothing_and_the_drain_goes_on(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow = chain(step(boom, 1), step(add, 1)).enqueue()  # a failure ends it through the count
    key = backend.broker.keyspace.workflow(flow.id)
    backend.broker.client.hset(key, "n", "two")
    other, _ = two_steps(backend)

    drain()

    assert backend.broker.workflow_fields(flow.id)["status"] == "open"
    assert f"Workflow of a step is damaged, nothing more is enqueued workflow_id={flow.id}" in (
        caplog.text
    )
    other.refresh()
    assert other.status == TaskResultStatus.SUCCESSFUL


def test_a_step_without_its_inputs_fails_the_workflow(backend: ThreadmillTaskBackend) -> None:
    flow, key = two_steps(backend)
    backend.broker.client.hdel(key, "after:1")

    drain()

    assert why_it_failed(backend, flow) == (
        "step 1 not enqueued: its inputs (after:1) are missing; something other than "
        "django-threadmill wrote the workflow's hash"
    )
    assert backend.broker.workflow_fields(flow.id)["x:1"] == why_it_failed(backend, flow)
    assert backend.broker.record(flow.steps[1].task_id) is None


def test_a_value_that_is_not_json_fails_the_workflow(backend: ThreadmillTaskBackend) -> None:
    flow, _ = two_steps(backend)
    assert backend.broker.advance_workflow(flow.id, 0, "successful", "{not json") == ("open", [1])

    enqueue_due(backend, flow.id, [1])

    why = why_it_failed(backend, flow)
    assert why.startswith(
        f"step 1 failed: not enqueued: The value of step 0 of workflow {flow.id!r}"
    )
    assert DAMAGED in why
    assert backend.broker.record(flow.steps[1].task_id) is None


def test_reading_a_damaged_workflow_back_names_the_problem(backend: ThreadmillTaskBackend) -> None:
    flow, key = two_steps(backend)
    backend.broker.client.hset(key, "p:1", "[]")
    with pytest.raises(PayloadError, match=r"Step 1 of workflow '.+' is missing or is not a stor"):
        get_workflow(flow.id)
    backend.broker.client.hset(key, "n", "two")
    with pytest.raises(PayloadError, match=r"has no step count \(n='two'\)"):
        get_workflow(flow.id)
    backend.broker.client.hdel(key, "status")
    with pytest.raises(PayloadError, match=r"Workflow '.+' has no status; something other than"):
        get_workflow(flow.id)
