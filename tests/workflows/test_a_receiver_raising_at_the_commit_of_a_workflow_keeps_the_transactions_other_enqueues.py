"""A task_enqueued receiver that raises while a workflow launched inside a transaction is
stored at its commit is logged, not raised: raised from the commit's on_commit callback, it
made Django run none of the transaction's later callbacks, so the enqueues and workflows after
it were never stored (docs/enqueue.md, Enqueue after commit)."""

import logging
from collections.abc import Iterator

import pytest
from django.db import transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.workflows import chain, get_workflow, group, step

from .tasks import add, number

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


@pytest.fixture
def raising_receiver() -> Iterator[None]:
    def raises(sender: type, task_result: TaskResult, **kwargs: object) -> None:
        raise RuntimeError("metrics service down")

    task_enqueued.connect(raises)
    yield
    task_enqueued.disconnect(raises)


@pytest.mark.usefixtures("raising_receiver")
def test_the_enqueues_after_the_workflow_are_stored_and_the_error_is_logged(
    backend: ThreadmillTaskBackend,
    enqueued: list[tuple[type, TaskResult]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with transaction.atomic():
        flow = chain(step(number, 1), step(add, 1)).enqueue()
        lone = number.enqueue(7)
        later = group(step(number, 2), step(number, 3)).enqueue()

    assert [s.state for s in get_workflow(flow.id).steps] == ["READY", "WAITING"]
    assert backend.get_result(lone.id).status == TaskResultStatus.READY
    assert [s.state for s in get_workflow(later.id).steps] == ["READY", "READY"]
    assert len(enqueued) == 4  # each first step and the lone task, announced once
    failures = [r for r in caplog.records if r.getMessage().startswith("Signal receiver failed")]
    assert [r.levelno for r in failures] == [logging.ERROR] * 4


@pytest.mark.usefixtures("raising_receiver")
def test_outside_a_transaction_the_launch_still_raises_the_receivers_error(
    backend: ThreadmillTaskBackend,
) -> None:
    """As a lone enqueue does, and as Django's own backends do: the workflow is stored."""
    with pytest.raises(RuntimeError, match="metrics service down"):
        chain(step(number, 1), step(add, 1)).enqueue()

    (workflow_id,) = backend.broker.recent_workflows(1)
    assert [s.state for s in get_workflow(workflow_id).steps] == ["READY", "WAITING"]
