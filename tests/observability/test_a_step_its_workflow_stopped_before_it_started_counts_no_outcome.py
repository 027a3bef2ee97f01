"""A workflow step a worker holds when its workflow is cancelled counts no outcome, as a cancel.

A worker that reads ahead holds steps the cancel cannot reach in their queue; it records such a
step FAILED with ``Cancelled`` instead of starting it (docs/workflows.md, Cancel). That outcome
was tallied as a failed attempt: ``threadmill_tasks_finished_total{outcome="failed"}``, the
queue's all-time FAILED counter, the admin's last hour and a run time and wait sample of a
task that never started, where a step the cancel reached while it waited counts none of them
(docs/observability.md, Families). It is in the done index all the same, as a cancelled task is:
among the admin's FAILED results.
"""

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Lease, Outcome
from django_threadmill.broker.metrics import Tally
from django_threadmill.compat import Task
from django_threadmill.workflows import group, step
from tests.support import Command, run_to_completion
from tests.workflows.support import cancelled_before_it_ran
from tests.workflows.tasks import acancels_its_workflow, acounted, cancels_its_workflow, counted


@pytest.mark.parametrize(
    ("canceller", "sibling", "room"),
    [
        (cancels_its_workflow, counted, ("--threads", "1")),
        (acancels_its_workflow, acounted, ("--async-concurrency", "1")),
    ],
    ids=["thread", "event-loop"],
)
def test_a_step_stopped_in_a_workers_buffer_counts_no_outcome(
    start_worker: Callable[..., Command],
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    tmp_path: Path,
    canceller: Task,
    sibling: Task,
    room: tuple[str, str],
) -> None:
    # One runner and a read-ahead of four: the sibling waits in the buffer while the first
    # step cancels the workflow.
    log = str(tmp_path / "runs.log")
    flow = group(step(canceller, log), step(sibling, 2, log)).enqueue()

    run_to_completion(start_worker(*room, "--burst"))

    stopped = cancelled_before_it_ran(flow, 1, "its workflow was cancelled: from a step")
    keys = backend.broker.queue_keys("default")
    assert redis_client.hgetall(keys.stats) == {"successful": "1"}
    counters = redis_client.hgetall(keys.metrics)
    assert [name for name in counters if name.startswith(f"{sibling.module_path}|")] == []
    assert redis_client.zscore(keys.done, stopped.id) is not None


def test_a_send_that_failed_keeps_the_done_index_ids_of_stopped_steps() -> None:
    """A tally holding only stopped steps counts nothing, yet its ids go to the done index:
    a failed send keeps them for the next."""
    tally = Tally()
    lease = Lease("a@default", "default", "1", "tests.workflows.tasks.counted")
    stopped = Finish(lease, Outcome.FAILED, "{}", 0, 0, cancelled=True)
    tally.add([("default", stopped)], reaping=False)

    taken = tally.take()
    assert not taken["default"].outcomes
    tally.put_back(taken)

    assert tally.take()["default"].index_entries()[2:] == [1, "a@default"]
