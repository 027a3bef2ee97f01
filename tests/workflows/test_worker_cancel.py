"""A real worker reserves ahead (read-ahead): a step it holds in its buffer when its workflow
is cancelled is not in its queue for the cancel to reach, and must not start all the same, on a
worker thread or on the event loop (docs/workflows.md, Cancel)."""

from collections.abc import Callable
from pathlib import Path

import pytest

from django_threadmill.compat import Task
from django_threadmill.workflows import group, step
from tests.support import Command, run_to_completion

from .support import cancelled_before_it_ran
from .tasks import acancels_its_workflow, acounted, cancels_its_workflow, counted


@pytest.mark.parametrize(
    ("canceller", "sibling", "room"),
    [
        (cancels_its_workflow, counted, ("--threads", "1")),
        (acancels_its_workflow, acounted, ("--async-concurrency", "1")),
    ],
    ids=["thread", "event-loop"],
)
def test_a_step_in_a_workers_buffer_when_its_workflow_is_cancelled_does_not_start(
    start_worker: Callable[..., Command],
    tmp_path: Path,
    canceller: Task,
    sibling: Task,
    room: tuple[str, str],
) -> None:
    log = tmp_path / "runs.log"
    # One runner, and a read-ahead of four: one acquire reserves both members, and the second
    # waits in the buffer while the first runs.
    flow = group(step(canceller, str(log)), step(sibling, 2, str(log))).enqueue()

    run_to_completion(start_worker(*room, "--burst"))

    second = cancelled_before_it_ran(flow, 1, "its workflow was cancelled: from a step")
    assert log.read_text().splitlines() == ["cancels"]
    assert second.worker_ids  # stopped by the worker that held it, not by the cancel
