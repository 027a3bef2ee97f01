"""What the workflow tests check of a workflow, and the states they set one up in, shared."""

import json

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Reservation
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.cancelled_steps import CancelledSteps
from django_threadmill.workflows import WorkflowResult, advance, chain, group, launch, step
from tests.backend_support import WORKER, fail, succeed

from .tasks import add, boom, number


def cancelled_before_it_ran(flow: WorkflowResult, index: int, why: str) -> TaskResult:
    """Read ``flow`` again; check that its step ``index`` was stored and ended cancelled before
    it ran, for ``why``; return that step's result."""
    flow.refresh()
    result = flow.results[index]
    assert result is not None
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].traceback.strip().endswith(f"Cancelled before it ran: {why}")
    return result


GONE_PATH = "tests.workflows.renamed_away.number"  # a module no deploy ships


def renamed_away(backend: ThreadmillTaskBackend, flow: WorkflowResult, index: int) -> None:
    """Make step ``index`` of ``flow`` name a task path that no longer imports, in its record
    and in the workflow's plan, as a deploy that renamed the task's module leaves them."""
    client = backend.broker.client
    for key, field in (
        (backend.broker.record_key(flow.steps[index].task_id), "payload"),
        (backend.broker.keyspace.workflow(flow.id), f"p:{index}"),
    ):
        assert key is not None
        stored = json.loads(client.hget(key, field))
        client.hset(key, field, json.dumps({**stored, "path": GONE_PATH}))


NOT_RUN = "step 2 failed: ValueError: down"  # why reserved_while_stored's step 1 is not run


def reserved_while_stored(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> tuple[WorkflowResult, Reservation]:
    """Enqueue a workflow whose step 1 a worker reserves right after a drainer stored it, and
    whose step 2 fails before that drainer marks step 1 enqueued; return the workflow and the
    worker's reservation of step 1."""
    flow = group(
        chain(step(number, 1), step(add, 1)), step(boom.using(queue_name="emails"), 0)
    ).enqueue()
    first, stored, failing = (s.task_id for s in flow.steps)
    reserved: list[Reservation] = []
    original = launch.mark_enqueued

    def failed_and_reserved_first(*args: object) -> None:
        reserved.extend(backend.broker.acquire("default", 4).reservations)  # read-ahead
        fail(backend, failing, ValueError("down"))
        advance.advance_from(backend, failing)
        original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(launch, "mark_enqueued", failed_and_reserved_first)
    succeed(backend, first, 1)
    advance.advance_from(backend, first)
    [reservation] = reserved
    assert reservation.lease.task_id == stored
    return flow, reservation


def stop_before_it_starts(backend: ThreadmillTaskBackend, reservation: Reservation) -> None:
    """Play a worker's look before it starts ``reservation``: it must record the step as
    cancelled instead."""
    stopped = CancelledSteps(backend.broker).cancellation(reservation)
    assert stopped is not None, "the worker would start it"
    assert backend.broker.finish(WORKER, [stopped]) == []
