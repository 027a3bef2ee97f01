"""A sharded queue past MAX_TASK_PATHS exports no task path short of its runs.

Each shard of a queue (``queue_shards``) keeps its own labelled paths, the first
MAX_TASK_PATHS it meets, and counts any later one as "other". Two new paths finished in the
same send, each first in its own shard, took the last label in one shard each: each shard
counted the other path's runs as "other". The scrape summed the shards as they were, so each
path's series showed only the runs of the shard that labelled it (here 1 of 2), the rest
hidden in "other", and the queue exported more labelled paths than the cap. A path that a
shard counting "other" does not label is now summed into "other": every series a path is
exported under holds all its runs, and the queue's total is unchanged.
"""

import json
import uuid

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.broker import Broker, Finish, Lease, NewTask, Outcome
from django_threadmill.broker.metrics import MAX_TASK_PATHS
from django_threadmill.codec.ids import make_task_id
from django_threadmill.codec.times import now_ms

TOKEN = "s3cret-token-for-the-scraper"
EARLY = [f"app.tasks.early{n}" for n in range(MAX_TASK_PATHS - 1)]  # one label left after them
LATE_A, LATE_B = "app.tasks.late_a", "app.tasks.late_b"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN, "queue_shards": {"default": 2}}


def new_task(broker: Broker, path: str, shard: int | None = None) -> NewTask:
    """Return a task of ``path`` for "default", in ``shard`` if given (its id picks it)."""
    while True:
        task_id = make_task_id(uuid.uuid4().hex, "default")
        if shard is None or broker.part_in("default", task_id) == broker.parts("default")[shard]:
            payload = json.dumps({"path": path, "args": [], "kwargs": {}})
            return NewTask(id=task_id, payload=payload, priority=0, run_after_ms=None)


def run_and_send(broker: Broker, tasks: list[NewTask]) -> None:
    """Enqueue ``tasks``, reserve them, record them SUCCESSFUL in that order (one finish
    call, as one ack batch) and send the metrics once, as the ack writer does."""
    broker.enqueue("default", tasks)
    leases: dict[str, Lease] = {}
    while len(leases) < len(tasks):
        leases |= {r.lease.task_id: r.lease for r in broker.acquire("default", 500).reservations}
    finishes = [
        Finish(
            lease=leases[task.id],
            outcome=Outcome.SUCCESSFUL,
            value="null",
            started_ms=now_ms(),
            finished_ms=now_ms(),
        )
        for task in tasks
    ]
    assert broker.finish("worker-a", finishes) == []
    broker.send_metrics()


def successes() -> dict[str, float]:
    """Scrape through the view; return each task label's successful count in "default"."""
    response = Client().get("/threadmill/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return {
        sample.labels["task"]: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        if sample.name == "threadmill_tasks_finished_total"
        and sample.labels["queue"] == "default"
        and sample.labels["outcome"] == "successful"
    }


def test_no_path_is_exported_short_of_runs_another_shard_counted_as_other(
    broker: Broker,
) -> None:
    run_and_send(broker, [new_task(broker, path) for path in EARLY])  # every shard labels them
    # One send: each shard meets its own new path first and gives it the last label.
    run_and_send(broker, [new_task(broker, LATE_A, shard=0), new_task(broker, LATE_B, shard=1)])
    # Each path once more, in the shard that labelled the other one.
    run_and_send(broker, [new_task(broker, LATE_A, shard=1), new_task(broker, LATE_B, shard=0)])

    found = successes()

    runs = {path: 1 for path in EARLY} | {LATE_A: 2, LATE_B: 2}
    assert sum(found.values()) == sum(runs.values())
    labelled = {task: count for task, count in found.items() if task != "other"}
    short = {task: (count, runs[task]) for task, count in labelled.items() if count != runs[task]}
    assert not short, f"exported short of their runs (exported, run): {short}"
    assert len(labelled) <= MAX_TASK_PATHS
    assert found["other"] == sum(runs[path] for path in runs.keys() - labelled.keys())
