"""A launch interrupted between writing its workflow's hash and storing its first steps.

Only a launch stores a workflow's first steps, and the hash is written before them. A store
whose round trip was lost (Redis gone, a dropped connection) raised past the cancel, and a
launch whose process was killed cancelled nothing: the hash stayed open for good, holding the
whole plan, read as READY by ``get_workflow`` and never advanced nor ended by anything.
"""

from collections.abc import Callable, Mapping, Sequence

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Enqueued, NewTask
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied, WorkflowDoesNotExist
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, group, launch, step
from django_threadmill.workflows.advance import advance_from
from tests.backend_support import succeed
from tests.support import wait_until

from .tasks import add, number

type Store = Callable[[Mapping[str, Sequence[NewTask]]], list[Enqueued | BrokerUnavailable]]

SHORT_TTL_MS = 200  # a launch TTL the tests wait out


def lost_after(backend: ThreadmillTaskBackend, *, stored: bool) -> Store:
    """Return a store of first steps whose reply is lost: Redis got it (``stored``) or not."""
    original = backend.broker.enqueue_groups

    def lost(groups: Mapping[str, Sequence[NewTask]]) -> list[Enqueued | BrokerUnavailable]:
        if stored:
            original(groups)
        raise MaybeApplied("Connection dropped after the call was sent")

    return lost


def cancel_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the launch's cancel find Redis gone, as after a process killed mid-launch."""

    def gone(self: WorkflowResult, reason: str = "") -> bool:
        raise BrokerUnavailable("Redis is away")

    monkeypatch.setattr(WorkflowResult, "cancel", gone)


def launched_id(backend: ThreadmillTaskBackend) -> str:
    [workflow_id] = backend.broker.recent_workflows(1)
    return workflow_id


def gone(workflow_id: str) -> bool:
    try:
        get_workflow(workflow_id)
    except WorkflowDoesNotExist:
        return True
    return False


def last_error(backend: ThreadmillTaskBackend, task_id: str) -> str:
    """Check that ``task_id`` FAILED; return the message of its last error."""
    result = backend.get_result(task_id)
    assert result.status == TaskResultStatus.FAILED
    return result.errors[-1].traceback.strip().rpartition("Cancelled: ")[2]


def test_a_launch_that_stored_no_step_and_could_not_cancel_expires(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_threadmill.broker.workflows.LAUNCH_TTL_MS", SHORT_TTL_MS)
    monkeypatch.setattr(backend.broker, "enqueue_groups", lost_after(backend, stored=False))
    cancel_fails(monkeypatch)

    with pytest.raises(MaybeApplied) as raised:
        chain(step(number, 1), step(add, 2)).enqueue()

    workflow_id = launched_id(backend)
    wait_until(lambda: gone(workflow_id), "the interrupted launch's workflow expiring")
    with pytest.raises(WorkflowDoesNotExist, match="its launch did not store its first steps"):
        get_workflow(workflow_id)
    assert raised.value.__notes__ == [
        f"Workflow {workflow_id!r} is not cancelled: its cancel failed too (Redis is away). "
        "The steps stored run; if none was, the workflow expires within 600s."
    ]


@pytest.mark.parametrize("stored", [False, True], ids=["not-stored", "stored"])
def test_a_launch_whose_store_was_lost_is_cancelled_once_redis_answers(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch, stored: bool
) -> None:
    monkeypatch.setattr(backend.broker, "enqueue_groups", lost_after(backend, stored=stored))

    with pytest.raises(BrokerUnavailable) as raised:
        chain(step(number, 1), step(add, 2)).enqueue()

    workflow_id = launched_id(backend)
    assert str(raised.value).startswith(f"Workflow {workflow_id!r} was not enqueued whole: ")
    assert "It is cancelled" in str(raised.value)
    assert isinstance(raised.value.__cause__, MaybeApplied)
    flow = get_workflow(workflow_id)
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith("cancelled: not enqueued whole: Connection dropped")
    assert [s.state for s in flow.steps] == ["NOT_RUN", "NOT_RUN"]
    drain()  # a stored first step does not run for a workflow the caller was told failed
    if stored:
        assert last_error(backend, flow.steps[0].task_id) == (
            f"Cancelled before it ran: its workflow ended ({flow.why})"
        )
    else:
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(flow.steps[0].task_id)


def test_a_launch_is_kept_for_good_once_its_first_steps_are_stored(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(number, 1), step(add, 2)).enqueue()

    assert backend.broker.client.pttl(backend.broker.keyspace.workflow(flow.id)) == -1


def test_steps_stored_by_a_launch_that_died_before_marking_them_keep_their_workflow(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the store and the mark: the first step that ends keeps the workflow,
    though it makes no step due, and the workflow runs to its end."""

    def lost(*args: object) -> None:
        raise BrokerUnavailable("Redis is away")

    monkeypatch.setattr(launch, "mark_enqueued", lost)
    cancel_fails(monkeypatch)
    with pytest.raises(BrokerUnavailable):
        group(step(number, 1), step(number, 2)).enqueue()
    monkeypatch.undo()
    flow = get_workflow(launched_id(backend))
    key = backend.broker.keyspace.workflow(flow.id)
    assert backend.broker.client.pttl(key) > 0

    succeed(backend, flow.steps[0].task_id, 1)
    advance_from(backend, flow.steps[0].task_id)

    assert backend.broker.client.pttl(key) == -1
    assert drain() == 1
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL


def test_a_launch_that_outlived_its_ttl_cancels_the_steps_it_stored(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its hash expired before the steps were stored: marking them writes no hash without a
    plan, which nothing would ever end, and they do not run for a workflow that is gone."""
    monkeypatch.setattr("django_threadmill.broker.workflows.LAUNCH_TTL_MS", SHORT_TTL_MS)
    original = backend.broker.enqueue_groups
    stored: list[str] = []

    def slow(groups: Mapping[str, Sequence[NewTask]]) -> list[Enqueued | BrokerUnavailable]:
        wait_until(lambda: gone(launched_id(backend)), "the launch's workflow expiring")
        stored.extend(new.id for tasks in groups.values() for new in tasks)
        return original(groups)

    monkeypatch.setattr(backend.broker, "enqueue_groups", slow)

    with pytest.raises(WorkflowDoesNotExist):
        chain(step(number, 1), step(add, 2)).enqueue()

    assert not backend.broker.client.exists(backend.broker.keyspace.workflow(launched_id(backend)))
    [first] = stored
    assert last_error(backend, first) == (
        "Cancelled before it ran: its workflow ended "
        "(its record expired before its steps were marked enqueued)"
    )
    assert drain() == 0
