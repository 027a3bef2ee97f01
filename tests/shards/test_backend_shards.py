"""A sharded queue through the backend: results by id, unique tasks, schedules, the admin."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResultStatus
from django_threadmill.schedules.scheduler import Scheduler, slot_task_id
from django_threadmill.schedules.slots import slot_ms
from testproject.example.tasks import echo
from tests.admin.conftest import QUEUES_URL, TASKS_URL, operator
from tests.broker.conftest import WORKER, finish
from tests.unique.tasks import refresh

from .conftest import SHARDS

__all__ = ["operator"]  # the admin tests' staff client fixture
TICK = {"task": "tests.schedules.tasks.report", "every": 60, "kwargs": {"kind": "tick"}}


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}, "schedules": {"tick": TICK}}


def test_results_are_found_by_id_in_every_shard(backend: ThreadmillTaskBackend) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(64)])
    assert len({shard_of(result.id, SHARDS) for result in results}) == SHARDS
    for result in results:
        found = backend.get_result(result.id)
        assert (found.status, found.args, found.task.queue_name) == (
            TaskResultStatus.READY,
            result.args,
            "default",
        )


def test_equal_unique_tasks_meet_in_one_shard(backend: ThreadmillTaskBackend) -> None:
    first = [refresh.enqueue(account) for account in range(8)]
    again = [refresh.enqueue(account) for account in range(8)]
    assert [result.id for result in again] == [result.id for result in first]
    assert len({shard_of(result.id, SHARDS) for result in first}) > 1  # spread all the same


def test_a_schedules_slots_share_the_shard_of_its_marker(backend: ThreadmillTaskBackend) -> None:
    now = [datetime(2026, 3, 28, 12, 0, 30, tzinfo=UTC)]
    scheduler = Scheduler(backend.pipeline, lambda: now[0])
    scheduler.fire_due()  # a new schedule only marks its latest slot (docs/schedules.md)
    now[0] += timedelta(minutes=1)
    scheduler.fire_due()
    slot = slot_ms(now[0].replace(second=0))
    ids = {slot_task_id("default", "tick", slot + n * 60_000, "default", SHARDS) for n in range(5)}
    assert {shard_of(task_id, SHARDS) for task_id in ids} == {shard_of("tick", SHARDS)}
    assert backend.broker.last_fired_ms("default", "tick") == slot
    assert backend.broker.record(slot_task_id("default", "tick", slot, "default", SHARDS))


def test_the_inspector_sums_the_shards(backend: ThreadmillTaskBackend) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(20)])
    broker = backend.broker
    leases = [r.lease for r in broker.acquire("default", 2 * SHARDS).reservations]
    # Each shard is asked for 2; ids are random, so a shard may hold fewer than that.
    in_shard = Counter(shard_of(result.id, SHARDS) for result in results)
    held = sum(min(2, in_shard[shard]) for shard in range(SHARDS))
    assert len(leases) == held
    broker.renew(WORKER, leases, ["default"])
    broker.finish(WORKER, [finish(leases[0])])
    broker.send_metrics()  # and the done index
    [overview] = Inspector(broker).overview(["default"])
    assert (overview.shards, overview.ready, overview.finished) == (SHARDS, 20 - held, 1)
    assert (overview.leased.counts, overview.outcomes.counts) == (
        {"reserved": held - 1},
        {"successful": 1},
    )
    assert Inspector(broker).waiting(["default"])["default"][0] == overview.ready
    [sighting] = Inspector(broker).workers(["default"])
    assert (sighting.worker_id, sighting.queue, sighting.held) == (WORKER, "default", held)


def test_the_admin_shows_one_queue_and_lists_every_shards_tasks(
    backend: ThreadmillTaskBackend, operator: Client
) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(12)])
    page = operator.get(QUEUES_URL).content.decode()
    assert f"({SHARDS} shards)" in page
    listing = operator.get(TASKS_URL, {"queue": "default", "status": "ready"}).content.decode()
    assert all(result.id in listing for result in results)
