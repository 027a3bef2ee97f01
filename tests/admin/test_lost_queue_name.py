"""A queue whose name Redis lost from the backend's set of queues comes back at a worker's
next heartbeat, so the admin lists it and the reaper settles its expired leases again.

With ``QUEUES`` empty (any queue) the admin and the reaper know a queue only from that set. Redis
can lose the set alone: a restart from an older snapshot, a ``DEL``, a failover on a Redis
Cluster, where the set lives in the alias's slot and a queue's keys in the queue's.
"""

import time
from collections.abc import Iterator

import pytest
import redis
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.worker import leases
from django_threadmill.worker.leases import HeldLeases, LeaseKeeper
from django_threadmill.worker.reaper import reap_once
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, page
from tests.backend_support import start
from tests.conftest import tasks_setting

QUEUE = "nightly"  # in no QUEUES: only Redis's set of queues names it
LIVE_WORKER = "live-host:2:abcd"  # a worker serving QUEUE, alive, holding nothing
WAIT_S = 10.0  # a deadline for the lease to lapse, never a pause


@pytest.fixture
def any_queue(redis_url: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """The backend with ``QUEUES`` empty and the shortest lease, so a lease lapses in 1 s."""
    setting = tasks_setting(redis_url, key_prefix, lease_ttl=1)
    with override_settings(TASKS={"default": {**setting["default"], "QUEUES": []}}):
        found = task_backends["default"]
        assert isinstance(found, ThreadmillTaskBackend)
        yield found


def test_a_queue_name_redis_lost_is_registered_again_by_a_worker_heartbeat(
    any_queue: ThreadmillTaskBackend,
    operator: Client,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leases, "REGISTER_EVERY_S", 0.0)  # the minute after its start is over
    task_id = add.using(queue_name=QUEUE).enqueue(1, 2).id
    start(any_queue, task_id)  # its worker dies: nothing renews the lease
    redis_client.delete(any_queue.broker.keyspace.queues)  # Redis loses the set alone
    keeper = LeaseKeeper(
        any_queue.broker, LIVE_WORKER, (QUEUE,), HeldLeases(), 1.0, on_crash=lambda: None
    )

    keeper.renew()  # the live worker's heartbeat

    assert QUEUE in any_queue.broker.queues()
    assert f">{QUEUE}<" in page(operator, QUEUES_URL)
    deadline = time.monotonic() + WAIT_S
    while not reap_once(any_queue).failed and time.monotonic() < deadline:
        pass  # until the dead worker's lease lapses and a pass settles it
    assert any_queue.get_result(task_id).status == TaskResultStatus.FAILED
