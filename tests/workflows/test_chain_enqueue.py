"""Enqueueing a step made due reads that step and its inputs' values, not the whole plan: a
chain of N steps reads N steps in all, where reading the plan for each step read N^2/2."""

from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, step
from django_threadmill.workflows.advance import enqueue_due
from django_threadmill.workflows.plan import PlannedStep

from .tasks import add, number


def test_the_last_step_of_a_long_chain_is_read_alone(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = 300
    flow = chain(step(number, 0), *(step(add, 1) for _ in range(steps - 1))).enqueue()
    last_id = flow.steps[-1].task_id
    broker = backend.broker
    for i in range(steps - 1):  # step i ended with the value i
        assert broker.advance_workflow(flow.id, i, "successful", str(i)) == ("open", [i + 1])
    read: list[int] = []
    read_step = PlannedStep.from_json

    def watched(index: int, data: dict[str, Any]) -> PlannedStep:
        read.append(index)
        return read_step(index, data)

    monkeypatch.setattr(PlannedStep, "from_json", watched)

    enqueue_due(backend, flow.id, [steps - 1])

    assert read == [steps - 1]
    assert backend.get_result(last_id).args == [steps - 2, 1]  # its input, then its own argument


def test_steps_due_in_a_workflow_that_is_gone_are_logged_not_enqueued(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow = chain(step(number, 0), step(add, 1)).enqueue()
    assert backend.broker.advance_workflow(flow.id, 0, "successful", "0") == ("open", [1])
    backend.broker.client.delete(backend.broker.keyspace.workflow(flow.id))  # expired meanwhile

    enqueue_due(backend, flow.id, [1])

    assert (
        f"Workflow is gone while steps were due, nothing more is enqueued workflow_id={flow.id}"
        in caplog.text
    )
    assert backend.broker.record(flow.steps[1].task_id) is None
