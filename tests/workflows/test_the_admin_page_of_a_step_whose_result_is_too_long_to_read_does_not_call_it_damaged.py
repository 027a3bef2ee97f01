"""A workflow's admin page reads no result longer than it checks (docs/admin.md, Cost per page
view): a step that returned one read as a success "without a result field", damaged, and with
that record's true damage it could not be told apart."""

import redis
from django.test import Client

from django_threadmill.admin.workflows import CHECKED_BYTES
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import group, step
from tests.admin.conftest import logged_in, page, staff_user
from tests.backend_support import succeed

from .tasks import number

WORKFLOWS_URL = "/admin/django_threadmill/task/workflows/"
DAMAGE = "without a result field"


def viewer() -> Client:
    return logged_in(staff_user("viewer", "view_queue", "view_task"))


def test_a_long_result_is_not_called_damaged(db: None, backend: ThreadmillTaskBackend) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()
    succeed(backend, flow.steps[0].task_id, "y" * 2 * CHECKED_BYTES)
    succeed(backend, flow.steps[1].task_id, 2)

    body = page(viewer(), f"{WORKFLOWS_URL}default/{flow.id}/")

    assert body.count(">SUCCESSFUL</span>") == 2
    assert DAMAGE not in body


def test_a_result_deleted_by_hand_is_still_called_damaged(
    db: None, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()
    for each in flow.steps:
        succeed(backend, each.task_id, "y" * 2 * CHECKED_BYTES)
    key = backend.broker.record_key(flow.steps[0].task_id)
    assert key is not None
    redis_client.hdel(key, "result")

    body = page(viewer(), f"{WORKFLOWS_URL}default/{flow.id}/")

    assert body.count(DAMAGE) == 1
