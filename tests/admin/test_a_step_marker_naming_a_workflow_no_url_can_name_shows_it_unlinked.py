"""A task whose ``workflow`` field names a workflow id no page URL can hold (written by hand, or
by another program sharing the key prefix) shows that id on its page as text, unlinked.

Ours are 32 hex digits. One ending in "/" had no URL at all, and the task's page answered 500;
one with a "/" inside linked to another alias's page, and "." or ".." to a page up the path.
"""

import html

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import detail_url, failed_task, page


@pytest.mark.parametrize("workflow_id", ["w/", "a/b", ".."])
def test_the_task_page_shows_the_workflow_without_a_link(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, workflow_id: str
) -> None:
    task_id = failed_task(backend)
    redis_client.hset(backend.broker.record_key(task_id), "workflow", f"{workflow_id}:1")

    shown = page(operator, detail_url(task_id))

    assert f'<span id="tm-workflow">{html.escape(workflow_id)}</span>' in shown
    assert "/workflows/default/" not in shown
