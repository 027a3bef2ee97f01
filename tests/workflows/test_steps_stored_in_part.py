"""Steps on a sharded queue whose call fails in one shard while the others are written.

The launch once left the workflow open for good, with the first steps of the shards that wrote
running unannounced and the others never stored, while ``enqueue()`` raised: a workflow the
caller was told failed, running, that could never end. A drainer announced none of the
steps such a call wrote, nor those a later drain stored once the shard was mended.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable, PartlyEnqueued
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, group, step
from django_threadmill.workflows.advance import advance_from
from tests.backend_support import succeed

from .tasks import add, number

SHARDS = 4
MEMBERS = 64  # a shard holds none of 64 random ids once in 10^8 runs


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}}


def break_shard(backend: ThreadmillTaskBackend, client: redis.Redis, shard: int) -> str:
    """Make the "default" shard ``shard`` refuse every enqueue; return the key to mend it."""
    ready = backend.broker.queue_keys(backend.broker.parts("default")[shard]).ready
    client.set(ready, "not a zset")
    return ready


def test_a_launch_stored_in_part_is_cancelled_with_the_steps_it_stored(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    break_shard(backend, redis_client, 0)

    with pytest.raises(BrokerUnavailable) as raised:
        group(*(step(number, n) for n in range(MEMBERS))).enqueue()

    message = str(raised.value)
    [workflow_id] = backend.broker.recent_workflows(1)
    assert f"Workflow {workflow_id!r} was not enqueued whole" in message
    assert "enqueue the workflow again" in message
    flow = get_workflow(workflow_id)
    assert flow.status == TaskResultStatus.FAILED
    assert flow.why.startswith("cancelled: not enqueued whole: ")
    stored = [s for s in flow.steps if shard_of(s.task_id, SHARDS) != 0]
    lost = [s for s in flow.steps if shard_of(s.task_id, SHARDS) == 0]
    assert stored
    assert lost
    for each in stored:  # stored, announced, and cancelled before any worker starts it
        assert each.task_status == TaskResultStatus.FAILED
        assert each.result is not None
        assert "Cancelled before it ran: its workflow was cancelled" in (
            each.result.errors[-1].traceback
        )
    assert all(each.state == "NOT_RUN" and each.task_status is None for each in lost)
    assert sorted(r.id for _, r in enqueued) == sorted(s.task_id for s in stored)


def test_a_drain_stored_in_part_announces_each_step_once_and_stores_the_rest_later(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    first = number.using(queue_name="emails")  # "emails" is not sharded
    flow = chain(step(first, 1), group(*(step(add, n) for n in range(16)))).enqueue()
    members = flow.steps[1:]
    broken = shard_of(members[0].task_id, SHARDS)
    in_broken = [s.task_id for s in members if shard_of(s.task_id, SHARDS) == broken]
    elsewhere = [s.task_id for s in members if shard_of(s.task_id, SHARDS) != broken]
    assert elsewhere
    mend = break_shard(backend, redis_client, broken)
    enqueued.clear()
    succeed(backend, flow.steps[0].task_id, 1)

    with pytest.raises(PartlyEnqueued):  # the drainer keeps the outbox entry
        advance_from(backend, flow.steps[0].task_id)

    assert sorted(r.id for _, r in enqueued) == sorted(elsewhere)
    fields = backend.broker.workflow_fields(flow.id)
    assert {m.task_id for m in members if fields[f"e:{m.index}"] == "enqueued"} == set(elsewhere)
    redis_client.delete(mend)
    enqueued.clear()

    advance_from(backend, flow.steps[0].task_id)  # the next look

    assert sorted(r.id for _, r in enqueued) == sorted(in_broken)
    assert drain() == 16
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results[1:] if r is not None] == list(range(1, 17))
    assert len(enqueued) == len(in_broken)  # nothing announced twice


def test_a_launch_that_cannot_be_cancelled_either_raises_what_the_store_said(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis went away after the store: the caller gets the store's error, which names the
    ids written, and a note that the workflow is not cancelled."""
    break_shard(backend, redis_client, 0)

    def gone(self: WorkflowResult, reason: str = "") -> bool:
        raise BrokerUnavailable("Redis is away")

    monkeypatch.setattr(WorkflowResult, "cancel", gone)

    with pytest.raises(PartlyEnqueued) as raised:
        group(*(step(number, n) for n in range(MEMBERS))).enqueue()

    [workflow_id] = backend.broker.recent_workflows(1)
    assert raised.value.__notes__ == [
        f"Workflow {workflow_id!r} is not cancelled: its cancel failed too (Redis is away). "
        "The steps stored run; if none was, the workflow expires within 600s."
    ]
    assert raised.value.written
