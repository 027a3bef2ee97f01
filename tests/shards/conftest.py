"""A backend whose "default" queue is split over four shards, and helpers to place tasks."""

import pytest

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.keys import shard_of
from tests.broker.conftest import new_task

SHARDS = 4


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}}


def tasks_per_shard(per_shard: int, shards: int = SHARDS) -> dict[int, list[NewTask]]:
    """Return new "default" tasks, ``per_shard`` in each shard (ids are tried until they fit)."""
    placed: dict[int, list[NewTask]] = {k: [] for k in range(shards)}
    while any(len(tasks) < per_shard for tasks in placed.values()):
        task = new_task("default")
        shard = shard_of(task.id, shards)
        if len(placed[shard]) < per_shard:
            placed[shard].append(task)
    return placed


def shard_counts(broker: Broker, ids: list[str]) -> dict[int, int]:
    """Return how many of ``ids`` live in each shard of "default"."""
    counts = dict.fromkeys(range(SHARDS), 0)
    for task_id in ids:
        counts[shard_of(task_id, broker.settings.shards_of("default"))] += 1
    return counts
