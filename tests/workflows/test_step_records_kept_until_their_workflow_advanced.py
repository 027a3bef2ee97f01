"""A workflow step's record keeps no expiry until its workflow has advanced from it, and a
drain counts only the entries that advanced a workflow (docs/workflows.md, Exactly once).

Before, a step that ended got ``result_ttl`` at once. With no drainer for longer than that (no
worker served the queue, no reaper ran), its record expired while its id waited in the outbox:
the drainer could not tell which workflow to advance, and the workflow stayed open for good
(its hash never expires while open), its later steps never run. A reap pass also counted such
an entry in ``workflow_steps_advanced``, though it advanced nothing.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import WorkflowResult, chain, step
from django_threadmill.workflows.advance import drain_queues
from tests.backend_support import succeed
from tests.support import Command, run_to_completion, wait_until, worker

from .tasks import add, number

RESULT_TTL_MS = 1000  # the test's own backend; the commands keep the default, a day


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"result_ttl": RESULT_TTL_MS / 1000}


def outbox_len(backend: ThreadmillTaskBackend) -> int:
    return backend.broker.client.llen(backend.broker.queue_keys("default").outbox)


def record_ttl_ms(backend: ThreadmillTaskBackend, task_id: str) -> int:
    """The record's PTTL: -1 for none, -2 for no record."""
    return backend.broker.client.pttl(backend.broker.record_key(task_id))


def wait_out_result_ttl(backend: ThreadmillTaskBackend, key_prefix: str) -> None:
    """Wait until a key given ``result_ttl`` now has expired: a record given it before has."""
    client, sentinel = backend.broker.client, f"{key_prefix}:sentinel"
    client.set(sentinel, 1, px=RESULT_TTL_MS)
    wait_until(lambda: not client.exists(sentinel), "the sentinel's expiry")


def two_steps(backend: ThreadmillTaskBackend) -> tuple[WorkflowResult, str]:
    """Enqueue a chain of two steps; return it and its first step's id."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    return flow, flow.steps[0].task_id


def test_a_step_cancelled_while_no_worker_came_for_result_ttl_still_ends_its_workflow(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    flow, first = two_steps(backend)
    assert backend.cancel(first, "by hand")
    assert record_ttl_ms(backend, first) == -1  # kept while its entry waits
    wait_out_result_ttl(backend, key_prefix)

    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith("step 0 cancelled: ")
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
    assert outbox_len(backend) == 0
    assert record_ttl_ms(backend, first) > 0  # its result_ttl runs from the drain


def test_a_step_whose_worker_died_after_its_finish_advances_its_workflow_after_result_ttl(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """The finish landed and its worker died before draining; nothing came for longer than
    ``result_ttl`` until a reap pass."""
    flow, first = two_steps(backend)
    succeed(backend, first, 1)
    assert (outbox_len(backend), record_ttl_ms(backend, first)) == (1, -1)
    wait_out_result_ttl(backend, key_prefix)

    reaped = run_to_completion(Command(redis_url, key_prefix, "threadmill_reap", "--once"))
    assert "workflow_steps_advanced=1" in reaped
    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results if r is not None] == [1, 2]
    assert record_ttl_ms(backend, first) > 0


def test_a_reap_pass_counts_no_advance_for_an_entry_whose_record_is_gone(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """One entry's record was deleted (by hand, or expired under an earlier version); the
    other's workflow advances: the pass counts one, and says why the other advanced none."""
    _, gone = two_steps(backend)
    flow, first = two_steps(backend)
    for task_id in (gone, first):
        assert backend.cancel(task_id, "by hand")
    backend.broker.client.delete(backend.broker.record_key(gone))

    reaped = run_to_completion(Command(redis_url, key_prefix, "threadmill_reap", "--once"))

    assert "workflow_steps_advanced=1" in reaped, reaped
    assert f"its workflow cannot advance from it task_id={gone}" in reaped
    assert outbox_len(backend) == 0
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED


def test_a_step_requeued_before_its_drain_keeps_no_expiry(backend: ThreadmillTaskBackend) -> None:
    """The drain finds it waiting again: nothing pending expires (docs/lifecycle.md)."""
    _, first = two_steps(backend)
    assert backend.cancel(first, "by hand")
    backend.requeue(first)

    assert drain_queues(backend, ["default"]) == 0  # nothing to advance from: it has not ended

    assert (outbox_len(backend), record_ttl_ms(backend, first)) == (0, -1)
    assert backend.get_result(first).status == TaskResultStatus.READY
