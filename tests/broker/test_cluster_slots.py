"""Scripts keep to one hash slot per queue, checked by a cluster-mode Redis.

docs/design.md, One hash tag per script, on Redis 6.2+.

A one-node Redis Cluster owns every slot, so the plain client works, yet the server still
refuses a script whose keys span slots (CROSSSLOT) or that touches a key outside its slot.
"""

import re
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, NewTask, Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.servers.redis_server import free_port, redis_process, redis_server_binary

from .conftest import WORKER, finish, start

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def wait_for_cluster_ok(url: str, timeout_s: float = 10.0) -> None:
    client = redis.Redis.from_url(url, decode_responses=True)
    deadline = time.monotonic() + timeout_s
    try:
        while client.cluster("INFO")["cluster_state"] != "ok":
            assert time.monotonic() < deadline, "the one-node cluster never reached state ok"
            time.sleep(0.02)  # polling a starting cluster with a deadline, not synchronising
    finally:
        client.close()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """Override the session Redis: a one-node cluster that owns all 16384 slots."""
    version = subprocess.run(
        [redis_server_binary(), "--version"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"v=(\d+)\.", version)
    if not found or int(found[1]) < 7:
        pytest.skip(f"needs redis-server 7.0+ (cluster-port, ADDSLOTSRANGE); found {version}")
    # The bus port defaults to port + 10000, past 65535 for high ephemeral ports: pick one.
    cluster = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
    with redis_process(*cluster, "--cluster-port", str(free_port())) as server:
        client = redis.Redis.from_url(server.url)
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        client.close()
        wait_for_cluster_ok(server.url)
        yield server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client; the shared fixture's cleanup DELs many slots at once, which fails here."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def test_server_enforces_slots(redis_client: redis.Redis) -> None:
    with pytest.raises(redis.exceptions.ClusterCrossSlotError):
        redis_client.mget("{a}x", "{b}y")


def test_every_transition_stays_in_its_slot(
    broker: Broker, enqueue: Callable[..., NewTask], expire_lease: Callable[[str], None]
) -> None:
    delayed = enqueue(run_after_ms=now_ms() + 3_600_000)
    for _ in range(4):
        enqueue()
    enqueue("emails")
    ok, failed, retried, released = (r.lease for r in broker.acquire("default", 4).reservations)
    [email] = (r.lease for r in broker.acquire("emails", 1).reservations)
    assert broker.start(WORKER, [start(ok), start(failed), start(retried), start(email)]) == []
    assert broker.renew(WORKER, [ok, failed, retried, released, email]) == []
    outcomes = [finish(ok), finish(failed, Outcome.FAILED, ERROR), finish(email)]
    assert broker.finish(WORKER, [*outcomes, finish(retried, Outcome.RETRY, ERROR)]) == []
    assert broker.release([released]) == 1
    assert broker.cancel(delayed.id, ERROR, now_ms()) == "cancelled"
    assert broker.requeue(failed.task_id) == "requeued"
    lease: Lease = broker.acquire("default", 1).reservations[0].lease
    expire_lease(lease.task_id)
    assert len(broker.reap("default", 10).released) == 1
    broker.send_metrics()  # and the done index
    assert broker.purge("default") == 2
    assert broker.purge("emails") == 1


def test_backend_round_trip(backend: ThreadmillTaskBackend) -> None:
    result = echo.using(queue_name="reports").enqueue("clustered")
    assert echo.get_result(result.id).status == TaskResultStatus.READY


def test_idle_wait_of_a_one_queue_worker_stays_in_one_slot(
    broker: Broker, enqueue: Callable[..., NewTask]
) -> None:
    enqueue("emails")
    assert broker.wait_for_work(["emails"], worker_id=WORKER, timeout_s=5) is True
