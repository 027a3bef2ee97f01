"""Workflow steps whose worker died while running them, settled by the reaper: a step of a
cancelled workflow gets no retry, and one that ends FAILED ends its workflow as a step that a
worker records FAILED does (docs/workflows.md, Cancel and Semantics)."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.worker.reaper import reap_once
from django_threadmill.workflows import WorkflowResult, advance, chain, group, step
from tests.backend_support import fail, start
from tests.lifecycle.support import wait_for_expiry

from .tasks import add, always_fails, boom, collect, number


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0}  # the shortest lease settings take: expiry is polled for


def reaped(flow: WorkflowResult, index: int) -> TaskResult:
    """Read ``flow`` again; check that step ``index`` ended FAILED with one lease error."""
    flow.refresh()
    result = flow.results[index]
    assert result is not None
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class for error in result.errors] == [LeaseExpired]
    return result


def waiting(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> list[int]:
    """Return how many tasks wait in the default queue's ready, delayed and outbox keys."""
    keys = backend.broker.queue_keys("default")
    return [
        redis_client.zcard(keys.ready),
        redis_client.zcard(keys.delayed),
        redis_client.llen(keys.outbox),
    ]


def test_a_step_whose_worker_died_after_its_workflow_was_cancelled_is_not_retried(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """The step's policy retries it at once: the reaper put it back to run again, though its
    workflow was cancelled, where a worker that saw it fail gives it no retry."""
    flow = chain(step(always_fails, 1), step(add, 1)).enqueue()
    running = flow.steps[0].task_id
    start(backend, running)  # its worker is then killed: nobody renews the lease
    assert flow.cancel("by hand")
    wait_for_expiry(backend.broker, redis_client)

    dry = reap_once(backend, dry_run=True)
    report = reap_once(backend)

    assert [line.split(" worker=")[0] for line in dry.lines] == [
        f"queue=default task_id={running} action=fail"
    ]
    assert (report.failed, report.retried, report.advanced) == (1, 0, 1)
    reaped(flow, 0)
    assert waiting(backend, redis_client) == [0, 0, 0]  # no attempt waits to run again
    assert (flow.status, flow.why) == (TaskResultStatus.FAILED, "cancelled: by hand")
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]


def test_a_step_whose_lease_expired_fails_its_workflow_as_a_failure_a_worker_records(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(step(number, 1), step(number, 2), then=step(collect)).enqueue()
    start(backend, flow.steps[0].task_id)
    wait_for_expiry(backend.broker, redis_client)

    report = reap_once(backend)

    assert (report.failed, report.retried, report.advanced) == (1, 0, 1)
    reaped(flow, 0)
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith("step 0 failed: django_threadmill.exceptions.LeaseExpired: ")
    # The other member, enqueued already, still runs; the callback never will.
    assert [s.state for s in flow.steps] == ["FAILED", "READY", "NOT_RUN"]
    assert flow.steps[2].not_run == flow.why
    assert waiting(backend, redis_client) == [1, 0, 0]


def test_a_step_reaped_after_its_workflow_failed_leaves_the_workflow_as_it_ended(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(step(number, 1), step(boom, 0)).enqueue()
    first, failing = (s.task_id for s in flow.steps)
    start(backend, first)
    fail(backend, failing, ValueError("down"))
    assert advance.drain(backend, "default") == 1  # the workflow fails before the reap
    wait_for_expiry(backend.broker, redis_client)

    report = reap_once(backend)

    assert (report.failed, report.advanced) == (1, 1)
    reaped(flow, 0)
    assert (flow.status, flow.why) == (TaskResultStatus.FAILED, "step 1 failed: ValueError: down")
    assert [s.state for s in flow.steps] == ["FAILED", "FAILED"]
    assert waiting(backend, redis_client) == [0, 0, 0]
