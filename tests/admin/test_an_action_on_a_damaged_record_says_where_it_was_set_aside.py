"""A requeue or cancel of a task whose record key is not a hash sets the record aside (docs/
lifecycle.md, Damaged records): the message says so, where it is listed and what to do, not
"the task is DAMAGED (not a hash) now, not FAILED (it changed meanwhile, or was never so)", which
read as if the task had moved on by itself."""

import pytest
import redis
from django.test import Client

from django_threadmill.aliases import threadmill_backend
from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, act, failed_task, page, post_action

SET_ASIDE = (
    "1 left alone: its record's key holds something other than a hash, so the action set it "
    "aside as a damaged record, which never runs. The queues page lists it under Damaged "
    "records, as does manage.py threadmill_queue damaged QUEUE: look at the key with redis-cli "
    "(TYPE, DUMP), delete it or restore the record, then drop the entry with manage.py "
    "threadmill_queue forget-damaged QUEUE ID (docs/lifecycle.md, Damaged records): {task_id}."
)


def damage(backend: ThreadmillTaskBackend, client: redis.Redis, task_id: str) -> None:
    """Put a list where the record of ``task_id`` was, as redis-cli RPUSH leaves it."""
    key = backend.broker.record_key(task_id)
    assert key is not None
    client.delete(key)
    client.rpush(key, "x")


@pytest.mark.parametrize(("action", "done"), [("requeue", "requeued"), ("cancel", "cancelled")])
def test_the_message_says_the_record_was_set_aside_and_where_to_find_it(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    action: str,
    done: str,
) -> None:
    task_id = failed_task(backend) if action == "requeue" else add.enqueue(1, 1).id
    damage(backend, redis_client, task_id)

    messages = act(operator, action, task_id)

    assert messages == [f"0 tasks {done}.", SET_ASIDE.format(task_id=task_id)]
    assert [r.id for r in backend.broker.damaged(["default"])] == [task_id]


@pytest.mark.usefixtures("two_aliases")
def test_on_another_alias_the_commands_it_names_take_that_alias(
    operator: Client, redis_client: redis.Redis
) -> None:
    """The commands named ran on the default alias, which does not hold the record."""
    bulk = threadmill_backend("bulk")
    task_id = add.using(backend="bulk", queue_name="bulk-in").enqueue(1, 1).id
    damage(bulk, redis_client, task_id)

    messages = post_action(operator, {"action": "cancel", "_selected_action": [f"bulk:{task_id}"]})

    assert messages == [
        "0 tasks cancelled.",
        SET_ASIDE.format(task_id=task_id)
        .replace("damaged QUEUE:", "damaged QUEUE --backend bulk:")
        .replace("QUEUE ID (", "QUEUE ID --backend bulk ("),
    ]
    assert "threadmill_queue forget-damaged QUEUE ID --backend bulk" in page(operator, QUEUES_URL)
