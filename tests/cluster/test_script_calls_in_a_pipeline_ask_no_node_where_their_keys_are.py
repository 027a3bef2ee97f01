"""A batch of script calls on a Redis Cluster is one pipeline whose calls go straight to the
nodes of their keys. redis-py 7's sync cluster client asked its default node where the keys of
each ``EVALSHA`` in a pipeline are (``COMMAND GETKEYS``) before sending it: a round trip more
per call, and every batch failed whole while that node was down, though its calls went to
others. The keys are read from the call (``ScriptKeysCluster``); redis-py 6 and 8 ask nothing
either way, so the test tells only under redis-py 7."""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from testproject.example.tasks import echo
from tests.servers.redis_cluster import LocalCluster

from .conftest import QUEUES


def commands_served(cluster: LocalCluster) -> dict[str, int]:
    """Calls per command, summed over the cluster's nodes."""
    served: dict[str, int] = {}
    for node in cluster.nodes:
        client = redis.Redis(port=node.port)
        for name, stats in client.info("commandstats").items():
            served[name] = served.get(name, 0) + int(stats["calls"])
        client.close()
    return served


def test_pipelined_script_calls_ask_no_node_for_their_keys(
    cluster: LocalCluster, backend: ThreadmillTaskBackend
) -> None:
    for node in cluster.nodes:
        client = redis.Redis(port=node.port)
        client.config_resetstat()
        client.close()

    results = [echo.using(queue_name=queue).enqueue(i) for i, queue in enumerate(QUEUES)]
    assert drain() == len(QUEUES)  # acquire, start and finish: batches over the queues

    assert [result.task.get_result(result.id).status for result in results] == [
        TaskResultStatus.SUCCESSFUL
    ] * len(QUEUES)
    served = commands_served(cluster)
    assert served.get("cmdstat_evalsha", 0) >= 3 * len(QUEUES)
    assert served.get("cmdstat_command|getkeys", 0) == 0
