"""With enqueue_on_commit, a workflow launched inside a transaction waits for its commit."""

import pytest
from django.db import transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import WorkflowDoesNotExist
from django_threadmill.workflows import chain, get_workflow, step

from .tasks import add, number

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


def test_nothing_is_stored_until_the_commit(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        flow = chain(step(number, 1), step(add, 1)).enqueue()
        assert [s.state for s in flow.steps] == ["WAITING", "WAITING"]
        with pytest.raises(WorkflowDoesNotExist):
            get_workflow(flow.id)

    flow.refresh()
    assert [s.state for s in flow.steps] == ["READY", "WAITING"]


def test_a_rollback_stores_nothing(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        flow = chain(step(number, 1), step(add, 1)).enqueue()
        transaction.set_rollback(True)

    with pytest.raises(WorkflowDoesNotExist):
        get_workflow(flow.id)


def test_before_the_commit_a_cancel_or_refresh_says_why_it_cannot(
    backend: ThreadmillTaskBackend,
) -> None:
    with transaction.atomic():
        flow = chain(step(number, 1), step(add, 1)).enqueue()
        with pytest.raises(WorkflowDoesNotExist, match="cannot be cancelled: it was launched"):
            flow.cancel()
        with pytest.raises(WorkflowDoesNotExist, match="cannot be read back: it was launched"):
            flow.refresh()

    assert flow.cancel("after the commit")
    assert flow.why == "cancelled: after the commit"
