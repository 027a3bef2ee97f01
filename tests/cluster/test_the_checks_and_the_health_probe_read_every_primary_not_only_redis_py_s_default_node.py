"""Each primary of a Redis Cluster has settings of its own, and the checks read INFO and CONFIG
of redis-py's default node alone: a primary evicting tasks (maxmemory-policy allkeys-lru) passed
``manage.py check`` and the worker's start, and a primary holding writes back was unseen by
``threadmill_health``, which blamed the workers. Each primary is read now, and a message names
those it holds on (docs/scaling.md, Redis Cluster).

The probe also closes the client it makes for itself: called in-process (a test, a health view),
it left a socket to each node it read open, for the garbage collector to find."""

import gc
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.checks import check_redis
from django_threadmill.conf.topology import masked_location
from django_threadmill.management.health import HealthCode
from tests.servers.redis_cluster import LocalCluster
from tests.support import wait_until

PAUSED = {"paused_reason": "client_pause", "paused_actions": "write"}


def others(backend: ThreadmillTaskBackend) -> list[str]:
    """The primaries other than the default node of ``backend``'s client, by name, sorted."""
    client = backend.broker.client
    assert isinstance(client, redis.RedisCluster)
    default = client.get_default_node().name
    return sorted(node.name for node in client.get_primaries() if node.name != default)


def where(backend: ThreadmillTaskBackend) -> str:
    return f"TASKS['default'] at {masked_location(backend.settings.location)}"


@pytest.fixture
def evicting(backend: ThreadmillTaskBackend, cluster: LocalCluster) -> Iterator[list[str]]:
    """Set maxmemory-policy allkeys-lru on every primary but the default node; yield them."""
    nodes = others(backend)
    clients = [redis.Redis.from_url(f"redis://{node}/0") for node in nodes]
    try:
        for client in clients:
            client.config_set("maxmemory-policy", "allkeys-lru")
        yield nodes
    finally:
        for client in clients:
            client.config_set("maxmemory-policy", "noeviction")
            client.close()


def test_a_primary_that_evicts_tasks_fails_the_checks_whichever_node_it_is(
    backend: ThreadmillTaskBackend, evicting: list[str]
) -> None:
    messages = {message.id: message.msg for message in check_redis(backend)}

    assert messages["threadmill.E003"] == (
        f"{where(backend)} (Redis Cluster primaries {evicting[0]} and {evicting[1]}): "
        "maxmemory-policy is 'allkeys-lru', so Redis may evict queued tasks."
    )
    assert messages["threadmill.W001"].startswith(  # the test cluster keeps no data on disk
        f"{where(backend)} (every Redis Cluster primary): persistence is off"
    )


@pytest.fixture
def one_paused(backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch) -> str:
    """Have one primary, not the default node, say in INFO what Valkey 8.1+ says during a
    CLIENT PAUSE WRITE (INFO clients); return its name."""
    read, paused = Broker.server_info, others(backend)[0]

    def with_the_pause(self: Broker, **options: Any) -> dict[str, Any]:
        node = options.get("node")
        return {**read(self, **options), **(PAUSED if node and node.name == paused else {})}

    monkeypatch.setattr(Broker, "server_info", with_the_pause)
    return paused


def test_a_primary_holding_writes_back_is_redis_to_the_health_probe_not_the_workers(
    backend: ThreadmillTaskBackend, one_paused: str
) -> None:
    with pytest.raises(CommandError) as held:
        call_command("threadmill_health", stdout=StringIO(), stderr=StringIO())

    assert held.value.returncode == HealthCode.UNREACHABLE, held.value
    assert (
        f"{where(backend)} (Redis Cluster primary {one_paused}): Redis holds every write back "
        "(paused_actions=write, paused_reason=client_pause), so no worker can renew its leases."
    ) in str(held.value)


def connections(cluster: LocalCluster) -> int:
    """The clients connected to the nodes of ``cluster``, replicas' links and this one aside."""
    total = 0
    for node in cluster.live():
        with redis.Redis(port=node.port) as client:
            total += len(client.client_list(_type="normal")) - 1
    return total


def test_the_health_probe_run_in_process_closes_its_connections(
    backend: ThreadmillTaskBackend, cluster: LocalCluster
) -> None:
    gc.collect()  # the clients earlier tests left are closed first
    before = connections(cluster)
    gc.disable()  # the probe's client is in a reference cycle, which the collector would close
    try:
        with pytest.raises(CommandError) as too_few:  # no worker runs here
            call_command("threadmill_health", stdout=StringIO(), stderr=StringIO())
        wait_until(lambda: connections(cluster) <= before, "the probe's connections closed", 10)
    finally:
        gc.enable()

    assert too_few.value.returncode == HealthCode.TOO_FEW
