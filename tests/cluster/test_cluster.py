"""A backend on a real Redis Cluster: queues on three primaries, every path of the product.

Durability is "replicated" here, so each enqueue and ack batch also proves the WAIT per node.
"""

import asyncio
import re
import threading
from collections.abc import Iterator

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import add, echo
from tests.admin.conftest import QUEUES_URL, TASKS_URL, detail_url, operator
from tests.backend_support import new_task, start
from tests.servers.redis_cluster import LocalCluster, info
from tests.support import Command, wait_until, worker

from .conftest import QUEUES, command_env

WORKER = "worker-cluster-1"
__all__ = ["operator"]  # the admin tests' staff client fixture


@pytest.fixture
def env(tasks_options: dict[str, object]) -> dict[str, str]:
    return command_env(tasks_options)


@pytest.fixture
def running_worker(redis_url: str, key_prefix: str, env: dict[str, str]) -> Iterator[Command]:
    command = worker(redis_url, key_prefix, "--threads", "2", extra_env=env)
    try:
        command.wait_for_log(r"Worker process started .*queues=billing,default,emails,images")
        yield command
        command.signal()
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def test_the_queues_sit_on_three_primaries(cluster: LocalCluster, broker: Broker) -> None:
    primaries = {cluster.primary_for(broker.queue_keys(queue).ready).port for queue in QUEUES}
    assert len(primaries) == 3


def test_enqueue_and_results_on_every_node(backend: ThreadmillTaskBackend) -> None:
    results = [echo.using(queue_name=queue).enqueue(queue) for queue in QUEUES]
    for result in results:
        assert echo.get_result(result.id).status == TaskResultStatus.READY
    assert backend.broker.queues() == sorted(QUEUES)


def test_one_enqueue_round_for_queues_on_three_nodes(backend: ThreadmillTaskBackend) -> None:
    """The coalescers' path: one cluster pipeline, split per node, one WAIT per node."""
    tasks = {queue: [new_task(queue)] for queue in QUEUES}
    outcomes = backend.broker.enqueue_groups(tasks)
    assert [outcome.stored for outcome in outcomes] == [1] * len(QUEUES)  # type: ignore[union-attr]
    for queue, [task] in tasks.items():
        assert backend.broker.record(task.id)["state"] == "ready", queue  # type: ignore[index]


def test_idle_worker_of_three_nodes_picks_up_from_each(
    running_worker: Command, backend: ThreadmillTaskBackend
) -> None:
    """The worker blocks on three slots at once; an enqueue to any of them wakes it."""
    for queue in QUEUES:
        result = echo.using(queue_name=queue).enqueue(queue)
        wait_until(lambda r=result: (r.refresh(), r.status)[1] == TaskResultStatus.SUCCESSFUL,
                   f"the task on {queue} ran")  # fmt: skip
        assert result.return_value == queue


def test_waiting_on_several_slots_wakes_and_stops_its_threads(broker: Broker) -> None:
    broker.register_queues(QUEUES)
    echo.using(queue_name="billing").enqueue("wake")
    assert broker.wait_for_work(QUEUES, WORKER, timeout_s=5) is True
    assert {t.name for t in threading.enumerate()} >= {f"threadmill-wake-{n}" for n in (1, 5)}
    assert broker.wait_for_work(QUEUES, WORKER, timeout_s=0.05) is False
    echo.using(queue_name="images").enqueue("wake again")
    assert broker.wait_for_work(QUEUES, WORKER, timeout_s=5) is True
    broker.wake_process(QUEUES, WORKER)  # stops and joins the waiters: the leak guard checks
    assert broker.wait_for_work(QUEUES, WORKER, timeout_s=5) is True


def test_reaper_settles_an_expired_lease_on_another_node(
    backend: ThreadmillTaskBackend,
    redis_client: redis.RedisCluster,
    redis_url: str,
    key_prefix: str,
    env: dict[str, str],
) -> None:
    result = echo.using(queue_name="images").enqueue("reap me")
    [reservation] = backend.broker.acquire("images", 1).reservations
    redis_client.zadd(backend.broker.queue_keys("images").leases, {result.id: 0})
    command = Command(redis_url, key_prefix, "threadmill_reap", "--once", extra_env=env)
    try:
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        command.close()
    assert re.search(r"Settled queue=images released=1 failed=0", log), log
    assert reservation.lease.task_id == result.id
    assert echo.get_result(result.id).status == TaskResultStatus.READY


def test_the_server_reapers_note_is_every_primary(
    cluster: LocalCluster, backend: ThreadmillTaskBackend, redis_client: redis.RedisCluster
) -> None:
    """A restart or failover of any primary holds the reapers (docs/lifecycle.md, After an
    outage or a stall): each may hold a queue's leases. The first pass writes the note, the
    next ones read it."""
    for _ in range(2):
        assert backend.broker.ms_since_server_seen() > 10**12  # noted from the first pass ever
    primaries = [n for n in cluster.live() if info(n, "replication")["role"] == "master"]
    servers = sorted(
        f"{info(node, 'server')['run_id']}:{info(node, 'replication')['master_replid']}"
        for node in primaries
    )
    assert len(servers) == 3
    assert redis_client.get(backend.broker.keyspace.server) == f"{','.join(servers)} 0"


def test_admin_pages_read_every_node(operator: Client, backend: ThreadmillTaskBackend) -> None:
    ids = [add.using(queue_name=queue).enqueue(1, 2).id for queue in QUEUES]
    start(backend, ids[0])
    page = operator.get(QUEUES_URL).content.decode()
    for queue in QUEUES:
        assert f">{queue}<" in page
    listing = operator.get(TASKS_URL, {"status": "running"})
    assert listing.status_code == 200
    assert ids[0] in listing.content.decode()
    detail = operator.get(detail_url(ids[1]))
    assert detail.status_code == 200
    assert "billing" in detail.content.decode()


def test_aenqueue_on_every_node(backend: ThreadmillTaskBackend) -> None:
    async def enqueue_all() -> list[str]:
        results = [await echo.using(queue_name=queue).aenqueue(queue) for queue in QUEUES]
        return [(await echo.aget_result(result.id)).status for result in results]

    assert asyncio.run(enqueue_all()) == [TaskResultStatus.READY] * len(QUEUES)
