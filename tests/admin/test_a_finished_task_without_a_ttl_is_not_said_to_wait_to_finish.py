"""A task page's "Result kept" says how long a finished record is kept when it has no TTL:
under ``result_ttl = None``, and for a workflow step its workflow has not advanced from yet.
Both read "until it finishes (pending tasks never expire)" of a task that had finished."""

import re

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, step
from tests.admin.conftest import detail_url, successful_task
from tests.backend_support import succeed
from tests.workflows.tasks import add, number


def kept(client: Client, task_id: str) -> str:
    """Return what the task's page says in its "Result kept" row."""
    response = client.get(detail_url(task_id))
    assert response.status_code == 200
    found = re.search(r"<th>Result kept</th><td>(.*?)</td>", response.content.decode())
    assert found is not None
    return found[1]


@pytest.mark.parametrize("tasks_options", [{"result_ttl": None}])
def test_a_result_kept_forever_is_said_to_be(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    said = kept(operator, successful_task(backend))

    assert said == "until purged (result_ttl is None: results never expire)"


def test_a_step_its_workflow_has_not_advanced_from_waits_for_it(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.steps[0].task_id
    succeed(backend, first, 1)  # no drainer runs: the workflow has not advanced from it

    said = kept(operator, first)

    assert said == "until its workflow advances from it, then 86400 s (docs/lifecycle.md, States)"


def test_a_result_stored_without_a_ttl_is_said_to_have_none(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Stored while result_ttl was None, read under a result_ttl."""
    task_id = successful_task(backend)
    redis_client.persist(backend.broker.queue_keys("default").record(task_id))

    assert kept(operator, task_id) == "no expiry: the record is kept until deleted"


def test_a_pending_task_and_a_finished_one_read_as_before(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    finished = successful_task(backend)
    waiting = add.enqueue(1, 1).id

    assert kept(operator, waiting) == "until it finishes (pending tasks never expire)"
    assert re.fullmatch(r"86\d{3} s more", kept(operator, finished))
