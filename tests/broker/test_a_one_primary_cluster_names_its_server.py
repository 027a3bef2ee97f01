"""A Redis Cluster of one primary (a managed cluster of one shard) names its server to the
reapers, as a cluster of several does (docs/lifecycle.md, After an outage or a stall).

redis-py returns a lone node's INFO as it is, not keyed by node as several nodes' are: read as
the latter, every reap pass raised a TypeError, ``threadmill_reap`` exited with a traceback and
a worker's supervisor died at its first reap pass.
"""

from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.broker import Broker, Lease
from tests.servers.redis_server import free_port, redis_process, server_version
from tests.support import Command

from .test_cluster_slots import wait_for_cluster_ok

OPTIONS: dict[str, object] = {"cluster": True}


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """Override the session Redis: a one-node cluster that owns all 16384 slots."""
    _, version = server_version()
    if version < (7, 0):
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
def tasks_options() -> dict[str, object]:
    return OPTIONS


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client; the shared fixture's cleanup DELs many slots at once, which fails here."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def test_the_note_names_the_one_primary(broker: Broker, redis_client: redis.Redis) -> None:
    assert broker.ms_since_server_seen() > 0
    info = redis_client.info()
    assert redis_client.get(broker.keyspace.server) == f"{info['run_id']}:{info['master_replid']} 0"


def test_a_reap_from_cron_settles_an_expired_lease(
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    broker: Broker,
    running: Lease,
    expire_lease: Callable[[str], None],
) -> None:
    """The first pass ever reaches a server no reaper saw another before: it holds nothing."""
    expire_lease(running.task_id)
    command = Command(redis_url, key_prefix, "threadmill_reap", "--once", options=OPTIONS)
    try:
        assert command.wait(30) == 0, command.log
        assert "Traceback" not in command.log, command.log
        assert redis_client.zscore(broker.queue_keys("default").leases, running.task_id) is None
    finally:
        command.close()
