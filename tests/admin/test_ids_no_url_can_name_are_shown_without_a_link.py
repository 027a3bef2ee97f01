"""A task or workflow id written into Redis by hand that no page URL can name is shown, unlinked.

Ours are hex digits, "@" and a queue name (no "/", not "." or ".."). An id read from Redis
with a "/" in it was linked to a URL that split it into another alias and id (a page saying
"No ThreadmillTaskBackend alias 'default/a'"), and one ending in "/" or empty had no URL at
all: the page answered 500, the queues page for as long as acquire's entry for such an id
stayed among the damaged records.
"""

import html

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from tests.admin.conftest import QUEUES_URL, TASKS_URL, failed_task, page

WORKFLOWS_URL = TASKS_URL + "workflows/"
TASK_IDS = ["x@default/", "a/b@default"]


def unlinked(listed: str, shown_id: str) -> None:
    """Check ``shown_id`` is on the page as a cell of text, and no link leads to it."""
    escaped = html.escape(shown_id)
    assert f"<td>{escaped}</td>" in listed
    assert f">{escaped}</a>" not in listed


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_an_id_acquire_set_aside_is_a_damaged_record_without_a_link(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, task_id: str
) -> None:
    failed_task(backend)
    redis_client.zadd(backend.broker.queue_keys("default").ready, {task_id: 1})
    drain()  # acquire sets the id aside: it names no record
    assert task_id in redis_client.hkeys(backend.broker.queue_keys("default").damaged)

    listed = page(operator, QUEUES_URL)

    assert "Damaged records" in listed
    unlinked(listed, task_id)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_record_under_such_an_id_is_listed_and_found_without_a_link(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, task_id: str
) -> None:
    keys = backend.broker.queue_keys("default")
    record = redis_client.hgetall(keys.record(failed_task(backend)))
    # Where the list reads it (the index's queue), and where the search box looks for it (the
    # queue its id names: "default/" for the first).
    for key in {keys.record(task_id), backend.broker.record_key(task_id)}:
        redis_client.hset(key, mapping=record)
    redis_client.zadd(keys.done, {task_id: 1})

    for url in (TASKS_URL, f"{TASKS_URL}?status=failed", f"{TASKS_URL}?q={task_id}"):
        listed = page(operator, url)

        unlinked(listed, task_id)


@pytest.mark.parametrize("workflow_id", ["w/", "a/b", "", ".."])
def test_a_workflow_under_such_an_id_is_listed_without_a_link(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, workflow_id: str
) -> None:
    keyspace = backend.broker.keyspace
    redis_client.zadd(keyspace.workflows, {workflow_id: 1})
    summary = {"status": "open", "n": "1", "succeeded": "0", "created_ms": "1"}
    redis_client.hset(keyspace.workflow(workflow_id), mapping=summary)

    listed = page(operator, WORKFLOWS_URL)

    unlinked(listed, workflow_id)
    assert "OPEN" in listed
