"""A step whose record holds a ``state`` no script writes (``HSET <key> state BANANA``, or the
field deleted) reads as DAMAGED, with the ``PayloadError`` message ``get_result`` raises for it:
it read as READY, as if it waited in its queue (docs/workflows.md, The API)."""

import asyncio

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import PayloadError
from django_threadmill.workflows import WorkflowResult, aget_workflow, get_workflow, group, step
from tests.admin.conftest import logged_in, page, staff_user

from .tasks import number

WORKFLOWS_URL = "/admin/django_threadmill/task/workflows/"


def damaged(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, state: str | None
) -> tuple[WorkflowResult, str]:
    """Launch a group of two; give its first step's record ``state`` (None: no state field);
    return the workflow and the message ``get_result`` raises for that step."""
    flow = group(step(number, 1), step(number, 2)).enqueue()
    key = backend.broker.record_key(flow.steps[0].task_id)
    assert key is not None
    if state is None:
        redis_client.hdel(key, "state")
    else:
        redis_client.hset(key, "state", state)
    with pytest.raises(PayloadError) as raised:
        backend.get_result(flow.steps[0].task_id)
    return flow, str(raised.value)


@pytest.mark.parametrize("state", ["BANANA", None])
def test_get_and_aget_workflow_read_the_step_as_damaged(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, state: str | None
) -> None:
    flow, message = damaged(backend, redis_client, state)

    for found in (get_workflow(flow.id), asyncio.run(aget_workflow(flow.id))):
        bad, other = found.steps
        assert (bad.state, bad.task_status, bad.result, bad.unreadable) == (
            "DAMAGED",
            None,
            None,
            message,
        )
        assert (other.state, other.unreadable) == ("READY", "")
        assert found.status == TaskResultStatus.READY


def test_the_admin_shows_the_step_as_damaged(
    db: None, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow, _ = damaged(backend, redis_client, "BANANA")
    operator = logged_in(staff_user("operator", "view_queue", "view_task"))

    body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/")

    assert ">DAMAGED</span>" in body
    link = f"/admin/django_threadmill/task/default/{flow.steps[0].task_id}/"
    assert f'<a href="{link}">' in body
    assert "BANANA" in page(operator, link)  # the task's page opens, naming it
    assert "holds the state &#x27;BANANA&#x27;, not one of ready" in body
    assert body.count(">READY</span>") == 1  # the other step
