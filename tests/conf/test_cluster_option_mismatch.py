"""A Redis of another kind than TASKS says: a Redis Cluster node reached without
OPTIONS['cluster'], and a single Redis with it. Enqueue, the system check and the worker name
it with the fix, never redis-py's bare MOVED reply, nor a failover to wait for."""

from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.cluster.conftest import skip_without_cluster_support
from tests.servers.redis_cluster import LocalCluster, local_cluster
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import worker

QUEUES = ("default", "emails", "reports")  # the queues of testproject's TASKS
OPTIONS: dict[str, object] = {"socket_connect_timeout": 1, "socket_timeout": 1}
MOVED = (
    r"^Redis at {url} is a node of a Redis Cluster, which serves this key on another node "
    r"\(MOVED \d+ 127\.0\.0\.1:\d+\)\. Set OPTIONS\['cluster'\] = True, so that each key is "
    r"sent to its node\.$"
)
NOT_A_CLUSTER = (
    r"Redis at {url} is not a Redis Cluster \(.*Cluster mode is not enabled on this node\), "
    r"but OPTIONS\['cluster'\] is True\. Remove 'cluster' from OPTIONS for a single Redis, or "
    r"point LOCATION at a node of the cluster; nothing was written\."
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    skip_without_cluster_support()
    with local_cluster() as created:
        yield created


@pytest.fixture(scope="module")
def single() -> Iterator[RedisProcess]:
    with redis_process() as server:
        yield server


def backend_at(url: str, key_prefix: str, **options: object) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default",
        {
            "LOCATION": url,
            "QUEUES": list(QUEUES),
            "OPTIONS": {"key_prefix": key_prefix, **OPTIONS, **options},
        },
    )


def queue_elsewhere(cluster: LocalCluster, key_prefix: str) -> str:
    """Return a queue whose hash slot a node other than LOCATION's serves."""
    here = cluster.live()[0].port
    return next(
        queue
        for queue in QUEUES
        if cluster.primary_for(f"{key_prefix}:{{default:{queue}}}").port != here
    )


def test_an_enqueue_at_a_cluster_node_without_the_option_names_it(
    cluster: LocalCluster, key_prefix: str
) -> None:
    """Before, redis-py's MovedError came out bare: "15466 127.0.0.1:31250"."""
    backend = backend_at(cluster.url, key_prefix)
    queue = queue_elsewhere(cluster, key_prefix)
    with pytest.raises(BrokerUnavailable, match=MOVED.format(url=cluster.url)) as raised:
        backend.enqueue(echo.using(queue_name=queue), [1], {})
    assert not isinstance(raised.value, MaybeApplied)


def test_the_check_names_a_cluster_node_without_the_option(
    cluster: LocalCluster, key_prefix: str
) -> None:
    """Before, the check raised MovedError, or passed when our keys' slot was LOCATION's."""
    [error] = check_redis(backend_at(cluster.url, key_prefix))
    assert error.id == "threadmill.E015"
    assert "Redis is a node of a Redis Cluster, but OPTIONS['cluster'] is not set" in error.msg
    assert error.hint == "Set OPTIONS['cluster'] = True for this backend."


def test_a_worker_at_a_cluster_node_without_the_option_stops_at_its_check(
    cluster: LocalCluster, key_prefix: str
) -> None:
    command = worker(cluster.url, key_prefix, options=OPTIONS)
    try:
        assert command.wait(timeout_s=60) == 1, command.log
        assert "(threadmill.E015)" in command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


def test_the_option_at_a_single_redis_is_refused_as_written_nowhere(
    single: RedisProcess, key_prefix: str
) -> None:
    """Before: MaybeApplied ("may be stored"), with a failover to wait for."""
    backend = backend_at(single.url, key_prefix, cluster=True)
    with pytest.raises(BrokerRefused, match=NOT_A_CLUSTER.format(url=single.url)):
        backend.enqueue(echo, [1], {})
    [error] = check_redis(backend)
    assert error.id == "threadmill.E004"


def test_a_worker_with_the_option_at_a_single_redis_stops_refused(
    single: RedisProcess, key_prefix: str
) -> None:
    """Before, the worker waited for the cluster forever, as for a failover."""
    command = worker(single.url, key_prefix, options={**OPTIONS, "cluster": True})
    try:
        assert command.wait(timeout_s=60) == 4, command.log  # ExitCode.REFUSED
        assert "is not a Redis Cluster" in command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


@pytest.mark.parametrize("cluster_option", [True, False], ids=["at-single", "at-cluster"])
async def test_aenqueue_names_the_mismatch_too(
    request: pytest.FixtureRequest, key_prefix: str, cluster_option: bool
) -> None:
    """The asyncio client meets the same replies: the same errors, with the same fix."""
    if cluster_option:
        url = request.getfixturevalue("single").url
        expected: tuple[type[BrokerUnavailable], str] = (BrokerRefused, NOT_A_CLUSTER)
        queue = "default"
    else:
        cluster = request.getfixturevalue("cluster")
        url, expected = cluster.url, (BrokerUnavailable, MOVED)
        queue = queue_elsewhere(cluster, key_prefix)
    backend = backend_at(url, key_prefix, cluster=cluster_option)
    error, message = expected
    with pytest.raises(error, match=message.format(url=url)) as raised:
        await backend.aenqueue(echo.using(queue_name=queue), [1], {})
    assert not isinstance(raised.value, MaybeApplied)
