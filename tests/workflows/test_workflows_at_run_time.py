"""Workflows as workers run them: retries, failures, cancels, expiry, payload bounds and a
sharded queue (docs/workflows.md, Semantics and Cancel)."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultStatus
from django_threadmill.exceptions import WorkflowDoesNotExist
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, group, step
from tests.support import run_to_completion, worker

from .tasks import (
    acancels_its_workflow_then_fails_for_later,
    add,
    always_fails,
    boom,
    cancels_its_workflow_then_fails_for_later,
    collect,
    counted,
    fails_first,
    length,
    number,
    text_of,
)

MAX_PAYLOAD_BYTES = 1024


@pytest.fixture
def tasks_options(request: pytest.FixtureRequest) -> dict[str, object]:
    if "sharded" in request.node.name:
        return {"queue_shards": {"default": 4}}
    return {"max_payload_bytes": MAX_PAYLOAD_BYTES}


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def states(flow: WorkflowResult) -> list[str]:
    flow.refresh()
    return [s.state for s in flow.steps]


def outbox_size(backend: ThreadmillTaskBackend, queue: str = "default") -> int:
    broker = backend.broker
    return sum(broker.client.llen(broker.queue_keys(part).outbox) for part in broker.parts(queue))


def test_a_member_retried_then_succeeding_calls_back_once_with_the_values_in_member_order(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = group(
        step(number, 1),
        step(fails_first, 2, str(log)),
        step(number, 3),
        then=step(collect, str(log)),
    ).enqueue()

    assert drain() == 5  # three members, one retry, the callback

    assert states(flow) == ["SUCCESSFUL"] * 4
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert runs(log) == ["fails_first attempt 1", "fails_first attempt 2", "collect"]
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [1, 20, 3]
    assert outbox_size(backend) == 0


def test_a_chain_step_retried_hands_on_the_value_of_its_attempt_that_succeeded(
    backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = chain(step(number, 1), step(fails_first, log=str(log)), step(add, 5)).enqueue()

    assert drain() == 4

    flow.refresh()
    assert [r.return_value for r in flow.results if r is not None] == [1, 10, 15]
    assert flow.status == TaskResultStatus.SUCCESSFUL


def test_a_step_that_fails_every_attempt_ends_the_workflow_once_naming_its_last_error(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(always_fails), step(add, 5)).enqueue()

    assert drain() == 4  # the first step, then three attempts

    assert states(flow) == ["SUCCESSFUL", "FAILED", "NOT_RUN"]
    assert flow.why == "step 1 failed: ValueError: attempt 3 of 1"
    assert flow.steps[2].not_run == flow.why
    assert flow.results[1] is not None
    assert len(flow.results[1].errors) == 3
    assert outbox_size(backend) == 0


def test_a_step_cancelled_by_hand_fails_its_workflow_and_enqueued_members_still_run(
    backend: ThreadmillTaskBackend,
) -> None:
    """As a step that failed (docs/workflows.md, Semantics): no callback, nothing else stopped."""
    flow = group(
        step(number.using(queue_name="emails"), 1),
        step(number, 2),
        then=step(collect),
    ).enqueue()
    assert backend.cancel(flow.steps[0].task_id, "by hand")

    assert drain() == 1  # the other member

    assert states(flow) == ["FAILED", "SUCCESSFUL", "NOT_RUN"]
    assert flow.why == (
        "step 0 cancelled: django_threadmill.exceptions.Cancelled: Cancelled before it ran: by hand"
    )
    assert not flow.cancel("too late")  # it had ended


@pytest.mark.parametrize(
    "canceller",
    [cancels_its_workflow_then_fails_for_later, acancels_its_workflow_then_fails_for_later],
    ids=["thread", "event-loop"],
)
def test_a_step_failing_after_its_workflow_was_cancelled_gets_no_retry_to_outlive_it(
    backend: ThreadmillTaskBackend, tmp_path: Path, canceller: Task
) -> None:
    """The retry was scheduled for an hour later, and the worker's look before it started it
    stopped it only while the cancelled workflow's hash lived: one that expired first
    (result_ttl) let the step of a cancelled workflow run again."""
    log = tmp_path / "runs"
    flow = chain(step(canceller, str(log)), step(add, 1)).enqueue()

    drain(wait_for_delayed=0)

    flow.refresh()
    first = flow.results[0]
    assert first is not None
    assert first.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in first.errors] == ["builtins.ValueError"]
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
    assert flow.why == "cancelled: from a step"
    client = backend.broker.client
    assert client.zcard(backend.broker.queue_keys("default").delayed) == 0  # no retry waits
    client.delete(backend.broker.keyspace.workflow(flow.id))  # result_ttl passed
    assert drain(wait_for_delayed=0) == 0
    assert runs(log) == ["cancels and fails"]


def test_a_worker_gives_no_retry_to_a_step_failing_after_its_workflow_was_cancelled(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = chain(step(cancels_its_workflow_then_fails_for_later, str(log)), step(add, 1)).enqueue()

    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    first = flow.results[0]
    assert first is not None
    assert (first.status, len(first.errors)) == (TaskResultStatus.FAILED, 1)
    assert backend.broker.client.zcard(backend.broker.queue_keys("default").delayed) == 0


def test_a_value_just_under_max_payload_bytes_is_handed_on_and_one_over_fails_the_workflow(
    backend: ThreadmillTaskBackend,
) -> None:
    fits = chain(step(number, 1), step(text_of, 900), step(length)).enqueue()
    too_large = chain(step(number, 1), step(text_of, 1000), step(length)).enqueue()

    drain()

    assert states(fits) == ["SUCCESSFUL"] * 3
    assert fits.results[2] is not None
    assert fits.results[2].return_value == 900
    assert states(too_large) == ["SUCCESSFUL", "SUCCESSFUL", "FAILED"]
    assert too_large.results[2] is None
    assert too_large.why.startswith(
        "step 2 failed: not enqueued: Task 'tests.workflows.tasks.length' payload is "
    )
    assert too_large.why.endswith(f"bytes, above max_payload_bytes={MAX_PAYLOAD_BYTES}. Store "
        "large data elsewhere (a file or a model) and pass its key, or raise "
        "OPTIONS['max_payload_bytes'].")  # fmt: skip


def test_an_open_workflow_behind_a_delayed_step_does_not_expire(
    backend: ThreadmillTaskBackend,
) -> None:
    later = add.using(run_after=timezone.now() + timedelta(hours=1))
    flow = chain(step(number, 1), step(later, 1), step(add, 2)).enqueue()
    key = backend.broker.keyspace.workflow(flow.id)

    assert drain(wait_for_delayed=0) == 1
    assert backend.broker.client.pttl(key) == -1  # no expiry while a step waits

    delayed = backend.broker.queue_keys("default").delayed
    backend.broker.client.zadd(delayed, {flow.steps[1].task_id: 0})  # the hour has passed
    assert drain(wait_for_delayed=0) == 2
    assert states(flow) == ["SUCCESSFUL"] * 3
    assert backend.broker.client.pttl(key) > 0  # it ended: kept result_ttl


def test_a_member_that_outlives_its_failed_workflow_runs_and_enqueues_nothing(
    backend: ThreadmillTaskBackend,
) -> None:
    """A failure stops nothing enqueued; its workflow expires result_ttl after it ended."""
    flow = group(step(boom, 1), step(number.using(queue_name="emails"), 2), then=step(collect))
    result = flow.enqueue()
    assert drain(queues=["default"]) == 1
    backend.broker.client.delete(backend.broker.keyspace.workflow(result.id))  # expired

    assert drain() == 1

    assert backend.get_result(result.steps[1].task_id).status == TaskResultStatus.SUCCESSFUL
    with pytest.raises(WorkflowDoesNotExist):
        get_workflow(result.id)
    assert not backend.broker.client.exists(backend.broker.keyspace.workflow(result.id))
    assert outbox_size(backend, "emails") == 0


def test_a_workflow_on_a_sharded_queue_runs_each_step_once_under_real_workers(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    members = 16
    flow = chain(
        step(counted, 1, str(log)),
        group(
            *(step(fails_first, log=str(log)) for _ in range(members)),
            then=step(collect, log=str(log)),
        ),
        step(counted, log=str(log)),
    ).enqueue()

    run_to_completion(
        worker(
            redis_url,
            key_prefix,
            "--burst",
            "--threads",
            "4",
            options={"queue_shards": {"default": 4}},
        )
    )

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL, flow.why
    assert sorted(runs(log)) == sorted(
        ["counted 1", "collect", f"counted {[10] * members}"]
        + ["fails_first attempt 1", "fails_first attempt 2"] * members
    )
    assert flow.results[-2] is not None
    assert flow.results[-2].return_value == [10] * members
    assert outbox_size(backend) == 0
