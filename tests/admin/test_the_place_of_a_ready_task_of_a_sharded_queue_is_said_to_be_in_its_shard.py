"""A READY task's page of a sharded queue says its place is in its shard: order holds within a
shard, not across (docs/scaling.md). It read "Place in queue 1 (1 runs next)" on the first task
of every shard at once."""

import re

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import detail_url

ACROSS = (
    "the queue has 4 shards, and priority and FIFO order hold within a shard, not across them "
    "(docs/scaling.md, A hot queue beyond one node: queue_shards)"
)


def place(client: Client, task_id: str) -> str:
    """Return what the task's page says in its "Place in queue" row."""
    response = client.get(detail_url(task_id))
    assert response.status_code == 200
    found = re.search(r"<th>Place in queue</th><td>(.*?)</td>", response.content.decode())
    assert found is not None
    return found[1]


@pytest.mark.parametrize("tasks_options", [{"queue_shards": {"default": 4}}])
def test_each_ready_task_of_a_sharded_queue_is_placed_in_its_shard(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_ids = [add.enqueue(1, n).id for n in range(8)]

    said = [place(operator, task_id) for task_id in task_ids]

    # Same priority: each shard's tasks in the order they were enqueued.
    shards = [backend.broker.part_of(task_id) for task_id in task_ids]
    places = [shards[: n + 1].count(shard) for n, shard in enumerate(shards)]
    assert said == [f"{n} in its shard (1 runs next there); {ACROSS}" for n in places]


def test_a_ready_task_of_a_queue_of_one_shard_reads_as_before(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    first, second = add.enqueue(1, 1).id, add.enqueue(1, 2).id

    said = [place(operator, first), place(operator, second)]

    assert said == ["1 (1 runs next)", "2 (1 runs next)"]
