"""A purge keeps a workflow step whose workflow has not advanced from it yet, and a launch's
error for an argument it cannot store names the step (docs/workflows.md, Exactly once;
docs/lifecycle.md, Cancel, requeue, purge).

Before, ``purge_finished`` deleted the record of a step still in its queue's outbox: the
drainer that came for the entry found no record, could not tell which workflow it belonged
to, and dropped it, so the workflow stayed open for good (its hash never expires while open)
and its next steps never ran.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import Chain, Group, chain, group, step
from tests.support import run_to_completion, worker

from .tasks import add, collect, number


def outbox_len(backend: ThreadmillTaskBackend) -> int:
    return backend.broker.client.llen(backend.broker.queue_keys("default").outbox)


def test_a_step_cancelled_from_the_admin_and_purged_before_a_worker_came_ends_its_workflow(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """An operator cancels a waiting step, then purges the queue's failed results, while no
    worker serves the queue."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    assert backend.cancel(flow.steps[0].task_id, "by hand")

    assert backend.purge_finished("default", TaskResultStatus.FAILED) == 0
    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith("step 0 cancelled: ")
    assert [s.state for s in flow.steps] == ["FAILED", "NOT_RUN"]
    assert outbox_len(backend) == 0
    assert backend.purge_finished("default", TaskResultStatus.FAILED) == 1  # advanced: it goes


def test_a_finished_step_purged_while_its_advance_is_held_still_advances_its_workflow(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """The next step's queue holds a key of another type, so the worker's drainer holds the
    entry (docs/workflows.md, An entry that cannot be advanced); a purge comes meanwhile."""
    flow = chain(step(number, 1), step(add.using(queue_name="emails"), 1)).enqueue()
    emails_ready = backend.broker.queue_keys("emails").ready
    backend.broker.client.set(emails_ready, "not a sorted set")
    run_to_completion(worker(redis_url, key_prefix, "--burst", "--queue", "default"))
    assert outbox_len(backend) == 1  # held, with the step's finish in the done index

    assert backend.purge_finished("default") == 0
    backend.broker.client.delete(emails_ready)
    run_to_completion(worker(redis_url, key_prefix, "--burst"))

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results if r is not None] == [1, 2]
    assert backend.purge_finished("default") == 1


UNSTORED = object()


@pytest.mark.parametrize(
    ("flow", "named"),
    [
        (group(step(number, 1), step(number, UNSTORED)), "Step 1"),
        (group(step(number, 1), step(number, n={"when": {1, 2}})), "Step 1"),
        (chain(step(number, 1), step(add, 1), step(add, UNSTORED)), "Step 2"),
        (chain(group(step(number, 1), step(number, 2)), step(collect, UNSTORED)), "Step 2"),
    ],
)
def test_an_argument_a_launch_cannot_store_is_named_with_its_step(
    backend: ThreadmillTaskBackend, flow: Chain | Group, named: str
) -> None:
    """A task is often several steps of one workflow: its name alone does not say which."""
    with pytest.raises(TypeError) as refused:
        flow.enqueue()
    assert str(refused.value).startswith(f"{named} of this workflow cannot be enqueued")
    assert "cannot be stored as JSON" in str(refused.value)
    assert backend.broker.recent_workflows(10) == []  # nothing stored
