"""A sharded queue on a real Redis Cluster: its shards on several primaries, every path."""

import threading

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.keys import shard_of
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once
from testproject.example.tasks import echo
from tests.servers.redis_cluster import LocalCluster
from tests.support import run_to_completion, worker

from .conftest import command_env

SHARDS = 6
WORKER = "worker-shards-1"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"cluster": True, "durability": "replicated", "queue_shards": {"default": SHARDS}}


def test_the_shards_sit_on_every_primary(cluster: LocalCluster, broker: Broker) -> None:
    primaries = {
        cluster.primary_for(broker.queue_keys(p).ready).port for p in broker.parts("default")
    }
    assert len(primaries) == 3


def test_enqueue_spreads_and_results_are_found_by_id(backend: ThreadmillTaskBackend) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(60)])
    assert {shard_of(result.id, SHARDS) for result in results} == set(range(SHARDS))
    for result in results:
        assert echo.get_result(result.id).status == TaskResultStatus.READY
    [overview] = Inspector(backend.broker).overview(["default"])
    assert (overview.ready, overview.shards) == (60, SHARDS)


def test_a_burst_worker_drains_every_node(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(120)])
    env = command_env(tasks_options)
    run_to_completion(worker(redis_url, key_prefix, "--threads", "2", "--burst", extra_env=env))
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
    [overview] = Inspector(backend.broker).overview(["default"])
    assert (overview.ready, overview.finished, overview.lifetime["successful"]) == (0, 120, 120)


def test_an_idle_wait_watches_every_shards_slot(broker: Broker) -> None:
    broker.register_queues(["default"])
    assert len(broker._wake_groups(["default"], WORKER)) == SHARDS  # one slot per shard
    echo.enqueue("wake")
    assert broker.wait_for_work(["default"], WORKER, timeout_s=5) is True
    assert {t.name for t in threading.enumerate()} >= {f"threadmill-wake-{n}" for n in (1, SHARDS)}
    broker.wake_process(["default"], WORKER)  # stops and joins the waiters: the leak guard checks


def test_the_reaper_settles_expired_leases_in_every_shard(
    backend: ThreadmillTaskBackend, redis_client: redis.RedisCluster
) -> None:
    results = backend.enqueue_many(echo, [([n], {}) for n in range(30)])
    leases: list[Lease] = []
    for _ in range(SHARDS):  # a split count can leave a fuller shard's extra for a later call
        leases += [r.lease for r in backend.broker.acquire("default", 30).reservations]
    assert len(leases) == 30
    for lease in leases:
        keys = backend.broker.queue_keys(backend.broker.part_of(lease.task_id) or "")
        redis_client.zadd(keys.leases, {lease.task_id: 0}, xx=True)
    assert reap_once(backend).released == 30
    assert {echo.get_result(r.id).status for r in results} == {TaskResultStatus.READY}


def test_a_pause_holds_every_primary_and_resume_wakes_each_shard(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    backend.enqueue_many(echo, [([n], {}) for n in range(60)])
    parts = broker.parts("default")
    assert broker.pause("default", "test", "cluster") is True
    assert broker.acquire("default", 60).reservations == []
    assert Inspector(broker).paused(["default"])["default"].reason == "cluster"
    for part in parts:
        broker.client.delete(broker.queue_keys(part).wake)

    assert broker.resume("default", "test") is True
    assert all(broker.client.llen(broker.queue_keys(part).wake) >= 1 for part in parts)
    taken = [len(broker.acquire("default", 60).reservations) for _ in range(SHARDS)]
    assert sum(taken) == 60  # each call asks each shard for a sixth: uneven shards take more
