"""Features on a Redis Cluster: unique tasks, queue limits, schedules, metrics, workflows and
progress, on queues in different slots (and "default" sharded over three), each on its own
primary's keys."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome, ProgressReport
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.progress import progress_of
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from django_threadmill.workflows import chain, group, step
from testproject.example.tasks import add, echo
from tests.backend_support import WORKER, start
from tests.support import run_to_completion, worker
from tests.unique.tasks import refresh
from tests.workflows.tasks import add as plus
from tests.workflows.tasks import collect, number

from .conftest import command_env

TOKEN = "s3cret-token-for-the-scraper"
OPTIONS = {
    "cluster": True,
    "queue_shards": {"default": 3},
    "queue_limits": {"billing": {"concurrency": 1}},
    "schedules": {
        "tick": {"task": "tests.schedules.tasks.report", "every": 60, "queue_name": "images"}
    },
    "metrics_token": TOKEN,
}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return OPTIONS


def test_unique_tasks_are_one_per_queue(backend: ThreadmillTaskBackend) -> None:
    first = {
        queue: refresh.using(queue_name=queue).enqueue(7).id for queue in ("default", "images")
    }
    again = {
        queue: refresh.using(queue_name=queue).enqueue(7).id for queue in ("default", "images")
    }
    assert again == first
    assert first["default"] != first["images"]


def test_a_concurrency_limit_holds_on_its_node(backend: ThreadmillTaskBackend) -> None:
    for n in range(3):
        echo.using(queue_name="billing").enqueue(n)
    acquired = backend.broker.acquire("billing", 3)
    assert (len(acquired.reservations), acquired.held_back) == (1, True)


def test_a_schedule_fires_into_a_queue_on_another_node(backend: ThreadmillTaskBackend) -> None:
    now = [datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC)]
    scheduler = Scheduler(backend.pipeline, lambda: now[0])
    scheduler.fire_due()  # a new schedule only marks its latest slot
    now[0] += timedelta(minutes=1)
    scheduler.fire_due()
    slot = slot_ms(now[0].replace(second=0))
    assert backend.broker.last_fired_ms("images", "tick") == slot
    assert backend.broker.record(slot_task_id("default", "tick", slot, "images"))


def test_metrics_sum_every_queue_and_shard(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    for queue in ("default", "images", "emails"):
        backend.enqueue_many(add.using(queue_name=queue), [((n, n), {}) for n in range(6)])
    run_to_completion(worker(redis_url, key_prefix, "--burst", extra_env=command_env(OPTIONS)))
    response = Client().get("/threadmill/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    finished = {
        sample.labels["queue"]: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        if sample.name == "threadmill_tasks_finished_total"
        and sample.labels["outcome"] == "successful"
        and sample.labels["task"] == "testproject.example.tasks.add"
    }
    assert finished == {"default": 6, "images": 6, "emails": 6}


def test_a_workflow_runs_across_queues_on_three_primaries(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """Each step's finish fills the outbox in its own slot, the workflow's hash lives in a
    third, and the next steps are enqueued into theirs: every call touches one slot."""
    flow = chain(
        step(number.using(queue_name="images"), 1),
        group(step(plus.using(queue_name="billing"), 1), step(plus, 2)),  # default: 3 shards
        step(collect.using(queue_name="emails")),
    ).enqueue()

    output = run_to_completion(
        worker(redis_url, key_prefix, "--burst", extra_env=command_env(OPTIONS))
    )

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL, output
    assert [s.queue for s in flow.steps] == ["images", "billing", "default", "emails"]
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == [2, 3]


def test_last_reports_ride_a_finish_call_over_queues_on_other_primaries(
    backend: ThreadmillTaskBackend,
) -> None:
    """Each queue's report goes first on its own node, as EVAL in the cluster pipeline."""
    results = [
        echo.using(queue_name=queue).enqueue(n) for n, queue in enumerate(["images", "billing"])
    ]
    leases = [start(backend, result.id) for result in results]
    finishes = [
        Finish(lease=lease, outcome=Outcome.SUCCESSFUL, value="1", started_ms=now_ms(),
               finished_ms=now_ms())
        for lease in leases
    ]  # fmt: skip
    reports = [ProgressReport(lease=lease, done=9, total=9, note="last") for lease in leases]
    assert backend.broker.finish(WORKER, finishes, reports) == []
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        found = progress_of(result)
        assert found is not None
        assert (found.done, found.total, found.note) == (9, 9, "last")
